#!/usr/bin/env node
// Drive an MCP server over Streamable HTTP with an official TypeScript client and its
// StreamableHTTPClientTransport:
//
//   node tests/clients/http_ts_client.mjs --sdk ts|ts2 [OPTIONS] SCENARIO -- URL
//
//   --sdk ts    @modelcontextprotocol/sdk 1.32: the handshake era (initialize, a session id,
//               the GET stream the transport opens after notifications/initialized)
//   --sdk ts2   @modelcontextprotocol/client 2.4; --mode auto (the default): a
//               server/discover probe on the same endpoint, then 2026-07-28 if offered;
//               --mode pin: the probe must offer 2026-07-28; --mode legacy: initialize
//
// The server is already running (e.g. `python3 mcp_min.py serve --http 127.0.0.1:0 SCRIPT`)
// and URL is its endpoint. SCENARIO and the records are those of ts_client.mjs and
// ts2_client.mjs (README.md beside this file), with "listen"/"stopListen" (ts2 only). A
// listing step that walks every page says in `pages` how many requests that took (the v2
// client walks them itself). The "connected" record adds `era` and `sessionId` (the
// Mcp-Session-Id the transport holds, or null).
// With --trace, besides each JSON-RPC message ("wire" records), every HTTP exchange is
// printed once its response headers are in (a stream's body is still to come):
//
//   {"event":"http","method":"POST","rpc":"tools/call"|"response"|null,"id":7|null,
//    "status":200,"request":{header:value},"response":{header:value}}
//
// ("rpc" and "id": those of the message POSTed; "response" for an answer to the server) with
// the MCP headers of each side (names in lower case), as http_py_client.py prints them.
// --env and --cwd have no server to act on here and are ignored.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  ANY_RESULT,
  LISTEN_ENDS,
  LISTEN_EVENTS,
  LISTEN_FILTER_KEYS,
  LIST_METHODS,
  SUBSCRIPTION_ID,
  StepDriver,
  UsageError,
  completeParams,
  declaredCapabilities,
  defaultElicitResult,
  emit,
  parseCommandLine,
  runDriver,
  sleep,
  withMeta,
} from './driver_common.mjs';

const SDKS = {
  ts: { package: '@modelcontextprotocol/sdk', modes: ['legacy'] },
  ts2: { package: '@modelcontextprotocol/client', modes: ['auto', 'pin', 'legacy'] },
};
const HEADERS = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version',
  'mcp-method', 'mcp-name', 'last-event-id', 'allow'];
const MAX_PAGES = 1000;

// ---------------------------------------------------------------- the SDKs

// What differs between the two SDKs, loaded on demand (the other may be absent).
async function loadSdk(name) {
  if (name === 'ts') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js');
    const types = await import('@modelcontextprotocol/sdk/types.js');
    return {
      Client,
      StreamableHTTPClientTransport,
      handlers: {
        sampling: types.CreateMessageRequestSchema,
        elicitation: types.ElicitRequestSchema,
        roots: types.ListRootsRequestSchema,
      },
      anyResult: types.ResultSchema,
      errors: [[types.McpError, 'McpError']],
      callTool: (client, params, options) => client.callTool(params, undefined, options),
    };
  }
  const sdk = await import('@modelcontextprotocol/client');
  return {
    Client: sdk.Client,
    StreamableHTTPClientTransport: sdk.StreamableHTTPClientTransport,
    handlers: {
      sampling: 'sampling/createMessage',
      elicitation: 'elicitation/create',
      roots: 'roots/list',
    },
    anyResult: ANY_RESULT,
    errors: [[sdk.ProtocolError, 'ProtocolError'], [sdk.SdkError, 'SdkError']],
    callTool: (client, params, options) => client.callTool(params, options),
  };
}

function sdkVersion(name) {
  // The exports maps hide package.json: find it from the entry point (dist/...).
  const entry = fileURLToPath(import.meta.resolve(SDKS[name].package));
  let dir = join(entry, '..');
  while (!dir.endsWith(join('@modelcontextprotocol', name === 'ts' ? 'sdk' : 'client'))) {
    dir = join(dir, '..');
  }
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
}

// ---------------------------------------------------------------- arguments

function parseOptions(argv) {
  const options = { sdk: { type: 'string', default: 'ts' }, mode: { type: 'string' } };
  const { values, config } = parseCommandLine(argv, options, (values) => {
    const sdk = SDKS[values.sdk];
    if (sdk === undefined) throw new UsageError(`--sdk ${values.sdk}: expected ts or ts2`);
    values.mode ??= sdk.modes[0];
    if (!sdk.modes.includes(values.mode)) {
      throw new UsageError(`--mode ${values.mode}: --sdk ${values.sdk} takes ${sdk.modes}`);
    }
  });
  return { ...config, sdk: values.sdk, mode: values.mode, url: new URL(config.command) };
}

// ------------------------------------------------------------------ the wire

function mcpHeaders(headers) {
  const picked = {};
  for (const name of HEADERS) if (headers.has(name)) picked[name] = headers.get(name);
  return picked;
}

// A fetch that reports each exchange when its response headers are in.
function tracingFetch(url, init = {}) {
  let rpc = null;
  let id = null;
  if (typeof init.body === 'string') {
    try {
      const body = JSON.parse(init.body);
      rpc = body.method ?? 'response';
      id = body.id ?? null;
    } catch {
      rpc = null;
    }
  }
  return fetch(url, init).then((response) => {
    emit({
      event: 'http',
      method: init.method ?? 'GET',
      rpc,
      id,
      status: response.status,
      request: mcpHeaders(new Headers(init.headers)),
      response: mcpHeaders(response.headers),
    });
    return response;
  });
}

// ------------------------------------------------------------------ driver

class Driver extends StepDriver {
  constructor(config, sdk) {
    super(config);
    this.sdk = sdk;
    this.negotiatedVersion = null;
    this.sentByMethod = new Map();
    this.listens = new Map();
    this.lastListenId = null;
    const options = { capabilities: declaredCapabilities(new Set(config.capabilities)) };
    if (config.mode === 'auto') options.versionNegotiation = { mode: 'auto' };
    if (config.mode === 'pin') options.versionNegotiation = { mode: { pin: '2026-07-28' } };
    this.client = new sdk.Client({ name: `mcp-min-http-${config.sdk}-driver`, version: '1.0.0' },
      options);
    this.installHandlers(this.client, sdk.handlers, (params) => (
      params.mode === 'url' ? { action: 'accept' } : defaultElicitResult(params)));
    this.transport = new sdk.StreamableHTTPClientTransport(config.url,
      config.trace ? { fetch: tracingFetch } : {});
    this.tapTransport();
  }

  // Every message the transport sends or hands to the client; whatever the client sets as
  // the transport's onmessage is wrapped as it is set.
  tapTransport() {
    const transport = this.transport;
    let initializeId = null;
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (message.method !== undefined && message.id !== undefined) {
        this.sentByMethod.set(message.method, (this.sentByMethod.get(message.method) ?? 0) + 1);
        if (message.method === 'initialize') initializeId = message.id;
        // McpSubscription does not tell its id: it is that of the request on the wire.
        if (message.method === 'subscriptions/listen') this.lastListenId = message.id;
      }
      if (this.config.trace) emit({ event: 'wire', dir: 'send', message });
      return send(message, options);
    };
    let handler;
    Object.defineProperty(transport, 'onmessage', {
      configurable: true,
      get: () => handler,
      set: (next) => {
        handler = next && ((message, extra) => {
          if (this.config.trace) emit({ event: 'wire', dir: 'recv', message });
          // The 1.x client keeps the negotiated version to itself: read it off the reply.
          if (message.id === initializeId && message.result) {
            this.negotiatedVersion = message.result.protocolVersion;
          }
          return next(message, extra);
        });
      },
    });
  }

  describeError(error) {
    for (const [kind, type] of this.sdk.errors) {
      if (!(error instanceof kind)) continue;
      let message = error.message;
      // The 1.x McpError prefixes the peer's message with "MCP error <code>: ".
      const prefix = `MCP error ${error.code}: `;
      if (type === 'McpError' && message.startsWith(prefix)) message = message.slice(prefix.length);
      const described = type === 'SdkError'
        ? { code: null, sdkCode: error.code, message, type }
        : { code: error.code, message, type };
      if (error.data !== undefined) described.data = error.data;
      return described;
    }
    if (error instanceof Error) return { code: null, message: error.message, type: error.name };
    return { code: null, message: String(error), type: typeof error };
  }

  handlerError({ code, message, data }) {
    return Object.assign(new Error(message), { code, data });
  }

  async connect() {
    await this.client.connect(this.transport, { timeout: this.config.timeout });
    const client = this.client;
    const modern = this.config.sdk === 'ts2' && client.getProtocolEra() === 'modern';
    let handshake = 'initialize';
    if (modern) handshake = 'discover';
    emit({
      event: 'connected',
      client: this.config.sdk,
      sdkVersion: sdkVersion(this.config.sdk),
      mode: this.config.mode,
      handshake,
      era: modern ? 'modern' : 'legacy',
      protocolVersion: this.config.sdk === 'ts2'
        ? client.getNegotiatedProtocolVersion() ?? null
        : this.negotiatedVersion,
      serverInfo: client.getServerVersion() ?? null,
      capabilities: client.getServerCapabilities() ?? null,
      instructions: client.getInstructions() ?? null,
      sessionId: this.transport.sessionId ?? null,
    });
  }

  // A host that is done with a handshake-era session ends it (DELETE): the client does not
  // on its own. Closing aborts the transport's GET stream, which the 1.x transport reports
  // as an error: not news once we close.
  async close() {
    for (const name of [...this.listens.keys()]) await this.stopListen({ listen: name });
    if (this.transport.sessionId !== undefined) await this.transport.terminateSession();
    this.client.onerror = () => {};
    await super.close();
  }

  async perform(step, options) {
    const client = this.client;
    if (Object.hasOwn(LIST_METHODS, step.op)) return this.list(step, options);
    switch (step.op) {
      case 'callTool':
        return this.sdk.callTool(client,
          withMeta(step, { name: step.name, arguments: step.arguments }), options);
      case 'complete':
        return client.complete(completeParams(step), options);
      case 'request':
        return client.request({ method: step.method, params: step.params }, this.sdk.anyResult,
          options);
      case 'listen':
        return this.listen(step, options);
      case 'stopListen':
        return this.stopListen(step);
      default:
        return super.perform(step, options);
    }
  }

  // One page when the step names a cursor or sets "all": false; else every page, merged,
  // with the number of requests that took. (The v2 client walks every page itself when it is
  // given no cursor, so there "all": false is a plain request.)
  async list(step, options) {
    const [method, key] = LIST_METHODS[step.op];
    const fetchPage = (cursor) => this.client[step.op](
      cursor === undefined ? undefined : { cursor }, options);
    if (step.cursor !== undefined) return fetchPage(step.cursor);
    if (step.all === false) {
      if (this.config.sdk === 'ts') return fetchPage(undefined);
      return this.client.request({ method, params: {} }, this.sdk.anyResult, options);
    }
    const before = this.sentByMethod.get(method) ?? 0;
    const items = [];
    let cursor;
    for (let pages = 1; pages <= MAX_PAGES; pages += 1) {
      const page = await fetchPage(cursor);
      items.push(...page[key]);
      cursor = page.nextCursor;
      if (cursor === undefined) {
        return { [key]: items, pages: (this.sentByMethod.get(method) ?? 0) - before };
      }
    }
    throw new Error(`${step.op}: still a nextCursor after ${MAX_PAGES} pages`);
  }

  // -- subscriptions/listen (2026-07-28, the v2 client)

  noteNotification(notification, params) {
    const type = LISTEN_EVENTS[notification.method];
    const tag = params?._meta?.[SUBSCRIPTION_ID];
    for (const listening of this.listens.values()) {
      if (type === undefined || listening.id !== tag) continue;
      const record = { type };
      if (typeof params.uri === 'string') record.uri = params.uri;
      listening.events.push(record);
      emit({ event: 'listenEvent', listen: listening.name, ...record });
    }
  }

  async listen(step, options) {
    const name = step.name ?? step.label;
    if (!name || this.listens.has(name)) {
      throw new UsageError('listen: needs a "name" (or "label") no open listen uses');
    }
    const filter = {};
    for (const key of LISTEN_FILTER_KEYS) if (step[key] !== undefined) filter[key] = step[key];
    const subscription = await this.client.listen(filter, { timeout: options.timeout });
    const listening = { name, id: this.lastListenId, subscription, events: [] };
    this.listens.set(name, listening);
    return { subscriptionId: listening.id, honored: subscription.honoredFilter };
  }

  async stopListen(step) {
    const listening = this.listens.get(step.listen);
    if (listening === undefined) throw new UsageError(`stopListen: no open listen ${step.listen}`);
    this.listens.delete(step.listen);
    await sleep(50); // let events already on their way arrive
    await listening.subscription.close();
    return { events: listening.events, end: LISTEN_ENDS[await listening.subscription.closed] };
  }

  waitFor(step) {
    if (step.listen === undefined) return super.waitFor(step);
    const listening = this.listens.get(step.listen);
    if (listening === undefined) throw new UsageError(`waitFor: no open listen ${step.listen}`);
    const seen = () => listening.events;
    return this.waitUntil(step, seen, `events on listen ${step.listen}`, () => (
      { listen: step.listen, count: seen().length, events: [...seen()] }));
  }
}

// runDriver builds the driver synchronously from the options: load the SDK they name first
// (a usage error is left for runDriver to report).
let sdkName = 'ts';
try {
  sdkName = parseOptions(process.argv.slice(2)).sdk;
} catch {
  // reported by runDriver
}
const loaded = await loadSdk(sdkName);
class LoadedDriver extends Driver {
  constructor(config) {
    super(config, loaded);
  }
}
await runDriver('http_ts_client.mjs', parseOptions, LoadedDriver);
