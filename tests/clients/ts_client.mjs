#!/usr/bin/env node
// Drive an MCP stdio server with the official TypeScript SDK client.
//
//   node tests/clients/ts_client.mjs [OPTIONS] SCENARIO -- SERVER_CMD [ARG...]
//
// SCENARIO is the name of a scenario in scenarios.json, "-" (steps on stdin),
// an inline JSON array of steps, or the path of a JSON file holding one.
// The step language and the output (one JSON object per line on stdout) are
// shared with py_client.py and described in README.md beside this file.
//
// Options:
//   --timeout MS        per-request timeout (default 30000); a step's
//                       "timeoutMs" overrides it
//   --env NAME=VALUE    extra environment for the server (repeatable); the
//                       SDK passes only a small whitelist of the parent's
//                       variables (HOME, LOGNAME, PATH, SHELL, TERM, USER)
//   --cwd DIR           working directory of the server
//   --capabilities L    comma list of client capabilities to declare, each
//                       answered by a handler: sampling, elicitation, roots
//                       (default: all three; "none" declares none)
//   --trace             also print every JSON-RPC message sent and received
//   --max-buffer BYTES  the SDK's limit on unparsed server output (default
//                       10 MiB); a longer message closes the connection
//   --mode legacy       accepted for symmetry with py_client.py: this SDK
//                       only has the initialize handshake
//
// Exit status: 0 when every step ran (whatever each returned), 1 when the
// connection could not be set up, 2 on a usage error.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  McpError,
  ResultSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
  StepDriver,
  UsageError,
  completeParams,
  declaredCapabilities,
  emit,
  parseCommandLine,
  runDriver,
  withMeta,
} from './driver_common.mjs';

const CLIENT_INFO = { name: 'mcp-min-ts-driver', version: '1.0.0' };
const MAX_PAGES = 1000;

// ---------------------------------------------------------------- arguments

function parseOptions(argv) {
  const options = {
    'max-buffer': { type: 'string' },
    mode: { type: 'string', default: 'legacy' },
  };
  const { values, config } = parseCommandLine(argv, options, (values) => {
    if (values.mode !== 'legacy') {
      throw new UsageError(
        `--mode ${values.mode}: the TypeScript SDK only speaks the legacy handshake`,
      );
    }
  });
  const maxBuffer = values['max-buffer'] === undefined ? undefined : Number(values['max-buffer']);
  if (maxBuffer !== undefined && !(Number.isInteger(maxBuffer) && maxBuffer > 0)) {
    throw new UsageError(`--max-buffer ${values['max-buffer']}: not a positive number of bytes`);
  }
  return { ...config, maxBuffer };
}

function sdkVersion() {
  // The package's exports map hides package.json; find it from a module it exports.
  const entry = fileURLToPath(import.meta.resolve('@modelcontextprotocol/sdk/client/index.js'));
  const manifest = join(entry, '..', '..', '..', '..', 'package.json');
  return JSON.parse(readFileSync(manifest, 'utf8')).version;
}

// ------------------------------------------------------------------ driver

class Driver extends StepDriver {
  constructor(config) {
    super(config);
    this.negotiatedVersion = null;
    this.client = new Client(CLIENT_INFO, {
      capabilities: declaredCapabilities(new Set(config.capabilities)),
    });
    this.installHandlers(this.client, {
      sampling: CreateMessageRequestSchema,
      elicitation: ElicitRequestSchema,
      roots: ListRootsRequestSchema,
    });
    this.transport = this.buildTransport();
  }

  describeError(error) {
    if (error instanceof McpError) {
      // McpError prefixes the peer's message with "MCP error <code>: "; report it as sent.
      const prefix = `MCP error ${error.code}: `;
      const message = error.message.startsWith(prefix)
        ? error.message.slice(prefix.length)
        : error.message;
      const described = { code: error.code, message, type: 'McpError' };
      if (error.data !== undefined) described.data = error.data;
      return described;
    }
    if (error instanceof Error) return { code: null, message: error.message, type: error.name };
    return { code: null, message: String(error), type: typeof error };
  }

  handlerError({ code, message, data }) {
    // Not an McpError: its message carries an "MCP error <code>: " prefix onto the wire.
    return Object.assign(new Error(message), { code, data });
  }

  buildTransport() {
    const transport = new StdioClientTransport({
      command: this.config.command,
      args: this.config.args,
      env: this.config.env,
      cwd: this.config.cwd,
      stderr: 'inherit',
      maxBufferSize: this.config.maxBuffer,
    });
    // Tap the wire: Protocol.connect() keeps an onmessage set before it and calls it first.
    let initializeId = null;
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if (message.method === 'initialize') initializeId = message.id;
      if (this.config.trace) emit({ event: 'wire', dir: 'send', message });
      return send(message, options);
    };
    transport.onmessage = (message) => {
      if (this.config.trace) emit({ event: 'wire', dir: 'recv', message });
      // The SDK keeps the negotiated version to itself; read it off the handshake reply.
      if (message.id === initializeId && message.result) {
        this.negotiatedVersion = message.result.protocolVersion;
      }
    };
    return transport;
  }

  async connect() {
    await this.client.connect(this.transport, { timeout: this.config.timeout });
    emit({
      event: 'connected',
      client: 'ts',
      sdkVersion: sdkVersion(),
      mode: 'legacy',
      handshake: 'initialize',
      protocolVersion: this.negotiatedVersion,
      serverInfo: this.client.getServerVersion() ?? null,
      capabilities: this.client.getServerCapabilities() ?? null,
      instructions: this.client.getInstructions() ?? null,
    });
  }

  async perform(step, options) {
    const client = this.client;
    switch (step.op) {
      case 'listTools':
        return this.list(step, 'tools', (params) => client.listTools(params, options));
      case 'listResources':
        return this.list(step, 'resources', (params) => client.listResources(params, options));
      case 'listResourceTemplates':
        return this.list(step, 'resourceTemplates', (params) =>
          client.listResourceTemplates(params, options),
        );
      case 'listPrompts':
        return this.list(step, 'prompts', (params) => client.listPrompts(params, options));
      case 'callTool':
        return client.callTool(
          withMeta(step, { name: step.name, arguments: step.arguments }),
          undefined,
          options,
        );
      case 'complete':
        return client.complete(completeParams(step), options);
      case 'request':
        return client.request({ method: step.method, params: step.params }, ResultSchema, options);
      default:
        return super.perform(step, options);
    }
  }

  // One page when the step names a cursor or sets "all": false; else every page, merged.
  async list(step, key, fetchPage) {
    if (step.all === false || step.cursor !== undefined) {
      return fetchPage(step.cursor === undefined ? undefined : { cursor: step.cursor });
    }
    const items = [];
    let cursor;
    for (let pages = 1; pages <= MAX_PAGES; pages += 1) {
      const page = await fetchPage(cursor === undefined ? undefined : { cursor });
      items.push(...page[key]);
      cursor = page.nextCursor;
      if (cursor === undefined) return { [key]: items, pages };
    }
    throw new Error(`${step.op}: still a nextCursor after ${MAX_PAGES} pages`);
  }
}

await runDriver('ts_client.mjs', parseOptions, Driver);
