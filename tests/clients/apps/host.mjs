// An MCP Apps host in a web page: the official AppBridge (@modelcontextprotocol/ext-apps)
// beside the official MCP client, talking to the mcp_min server at /mcp of the page's own
// origin (viewer.py serves both). esbuild bundles this file for the page (viewer.py does).
//
// The page's query string says what to show:
//   tool   the tool to call (default suggest_gifts); its _meta.ui.resourceUri is the widget
//   args   its arguments, as JSON
//   era    "handshake" (initialize, the client's default) or "stateless" (2026-07-28: the
//          client's server/discover probe, then every request with its envelope)
//
// What it does, as a chat client would: list the tools, read the tool's widget, render it
// in a sandboxed iframe (no same origin: the widget cannot reach the page) under the
// Content-Security-Policy its _meta.ui.csp asks for, call the tool, and hand the widget
// the arguments and the result. Tool calls the widget makes go through the bridge to the
// server. window.host keeps what happened, for the test that drives the page.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
} from '@modelcontextprotocol/ext-apps/app-bridge';

const UI_EXTENSION = 'io.modelcontextprotocol/ui';
const INFO = { name: 'mcp-min-apps-host', version: '1.0.0' };
const host = (window.host = { ready: false, error: null, events: [], resultMeta: null });

function note(event, detail) {
  host.events.push(detail === undefined ? { event } : { event, detail });
  document.getElementById('log').textContent += `${event}\n`;
}

// The policy the spec has a host build from _meta.ui.csp (strict when there is none)
function contentSecurityPolicy(csp = {}) {
  const list = (domains, otherwise) => (domains?.length ? domains.join(' ') : otherwise);
  const resources = list(csp.resourceDomains, '');
  return [
    "default-src 'none'",
    `script-src 'unsafe-inline' ${resources}`,
    `style-src 'unsafe-inline' ${resources}`,
    `img-src data: ${resources}`,
    `font-src ${list(csp.resourceDomains, "'none'")}`,
    `media-src data: ${resources}`,
    `connect-src ${list(csp.connectDomains, "'none'")}`,
    `frame-src ${list(csp.frameDomains, "'none'")}`,
    "object-src 'none'",
    `base-uri ${list(csp.baseUriDomains, "'none'")}`,
  ].join('; ');
}

function withPolicy(html, csp) {
  const meta = document.createElement('meta');
  meta.httpEquiv = 'Content-Security-Policy';
  meta.content = contentSecurityPolicy(csp);
  const tag = meta.outerHTML;
  // first thing in <head>, before any script of the widget
  if (/<head[^>]*>/i.test(html)) {
    return html.replace(/<head[^>]*>/i, (head) => head + tag);
  }
  return tag + html;
}

async function main() {
  const query = new URLSearchParams(location.search);
  const toolName = query.get('tool') || 'suggest_gifts';
  const args = JSON.parse(query.get('args') || '{}');
  const stateless = query.get('era') === 'stateless';
  const capabilities = {
    extensions: { [UI_EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } },
  };
  const options = { capabilities };
  if (stateless) {
    options.versionNegotiation = { mode: 'auto' };
  }
  const client = new Client(INFO, options);
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', location.href)));
  host.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;
  host.serverCapabilities = client.getServerCapabilities();
  note('connected', { protocolVersion: host.protocolVersion });

  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === toolName);
  if (!tool) {
    throw new Error(`the server has no tool ${toolName}`);
  }
  const uri = getToolUiResourceUri(tool);
  if (!uri) {
    throw new Error(`${toolName} names no widget in its _meta.ui.resourceUri`);
  }
  const { contents } = await client.readResource({ uri });
  const [content] = contents;
  if (content.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`${uri} is ${content.mimeType}, not ${RESOURCE_MIME_TYPE}`);
  }
  host.resourceMeta = content._meta ?? null;
  note('widget read', { uri });

  const iframe = document.createElement('iframe');
  iframe.id = 'widget';
  iframe.title = uri;
  iframe.setAttribute('sandbox', 'allow-scripts');
  document.getElementById('frame').append(iframe);

  const bridge = new AppBridge(client, INFO, { serverTools: {}, logging: {} }, {
    hostContext: { theme: 'light', displayMode: 'inline', platform: 'web',
                   containerDimensions: { maxHeight: 2000 } },
  });
  bridge.onsizechange = ({ height }) => {
    if (height) {
      iframe.style.height = `${height + 4}px`;
    }
  };
  bridge.oninitialized = async () => {
    note('widget initialized');
    try {
      await bridge.sendToolInput({ arguments: args });
      const result = await client.callTool({ name: toolName, arguments: args });
      host.resultMeta = result._meta ?? null;
      await bridge.sendToolResult(result);
      note('result sent', { isError: result.isError ?? false });
      host.ready = true;
    } catch (error) {
      fail(error);
    }
  };
  // the bridge listens before the widget's page can send its first message
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = withPolicy(content.text, content._meta?.ui?.csp);
}

function fail(error) {
  host.error = String(error?.stack || error);
  note('error', host.error);
}

main().catch(fail);
