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

import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  McpError,
  ResultSchema,
} from '@modelcontextprotocol/sdk/types.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLIENT_INFO = { name: 'mcp-min-ts-driver', version: '1.0.0' };
const ALL_CAPABILITIES = ['sampling', 'elicitation', 'roots'];
const CANCEL_REASON = 'cancelled by test driver';
const MAX_PAGES = 1000;

// What the client answers to server-initiated requests unless a step
// ("onSampling", "onElicit", "onRoots") configures something else.
const DEFAULT_SAMPLING_RESULT = {
  role: 'assistant',
  content: { type: 'text', text: 'mock reply' },
  model: 'mock-model',
  stopReason: 'endTurn',
};
const DEFAULT_ROOTS_RESULT = { roots: [{ uri: 'file:///tmp/mcp-min-root', name: 'test root' }] };

class UsageError extends Error {}

function emit(record) {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------- arguments

function parseCommandLine(argv) {
  const split = argv.indexOf('--');
  if (split === -1 || split === argv.length - 1) {
    throw new UsageError('missing "-- SERVER_CMD [ARG...]"');
  }
  const { values, positionals } = parseArgs({
    args: argv.slice(0, split),
    allowPositionals: true,
    options: {
      timeout: { type: 'string', default: '30000' },
      env: { type: 'string', multiple: true, default: [] },
      cwd: { type: 'string' },
      capabilities: { type: 'string', default: ALL_CAPABILITIES.join(',') },
      trace: { type: 'boolean', default: false },
      'max-buffer': { type: 'string' },
      mode: { type: 'string', default: 'legacy' },
    },
  });
  if (positionals.length !== 1) {
    throw new UsageError('expected exactly one SCENARIO before "--"');
  }
  if (values.mode !== 'legacy') {
    throw new UsageError(`--mode ${values.mode}: the TypeScript SDK only speaks the legacy handshake`);
  }
  const timeout = Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) {
    throw new UsageError(`--timeout ${values.timeout}: not a positive number of milliseconds`);
  }
  const env = {};
  for (const pair of values.env) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env ${pair}: expected NAME=VALUE`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const maxBuffer = values['max-buffer'] === undefined ? undefined : Number(values['max-buffer']);
  if (maxBuffer !== undefined && !(Number.isInteger(maxBuffer) && maxBuffer > 0)) {
    throw new UsageError(`--max-buffer ${values['max-buffer']}: not a positive number of bytes`);
  }
  const capabilities = values.capabilities === 'none' ? [] : values.capabilities.split(',').filter(Boolean);
  for (const name of capabilities) {
    if (!ALL_CAPABILITIES.includes(name)) throw new UsageError(`unknown capability ${name}`);
  }
  return {
    steps: loadSteps(positionals[0]),
    command: argv[split + 1],
    args: argv.slice(split + 2),
    timeout,
    env,
    cwd: values.cwd,
    capabilities,
    trace: values.trace,
    maxBuffer,
  };
}

function loadSteps(scenario) {
  const builtIn = JSON.parse(readFileSync(join(HERE, 'scenarios.json'), 'utf8'));
  let steps;
  if (Object.hasOwn(builtIn, scenario)) steps = builtIn[scenario];
  else if (scenario === '-') steps = JSON.parse(readFileSync(0, 'utf8'));
  else if (scenario.trimStart().startsWith('[')) steps = JSON.parse(scenario);
  else steps = JSON.parse(readFileSync(scenario, 'utf8'));
  if (!Array.isArray(steps) || !steps.every((s) => s && typeof s.op === 'string')) {
    throw new UsageError('SCENARIO must be a JSON array of objects that each have an "op"');
  }
  return steps;
}

function sdkVersion() {
  // The package's exports map hides package.json; find it from a module it exports.
  const entry = fileURLToPath(import.meta.resolve('@modelcontextprotocol/sdk/client/index.js'));
  const manifest = join(entry, '..', '..', '..', '..', 'package.json');
  return JSON.parse(readFileSync(manifest, 'utf8')).version;
}

// ------------------------------------------------------------------ errors

function describeError(error) {
  if (error instanceof McpError) {
    // McpError prefixes the peer's message with "MCP error <code>: "; report it as sent.
    const prefix = `MCP error ${error.code}: `;
    const message = error.message.startsWith(prefix) ? error.message.slice(prefix.length) : error.message;
    const described = { code: error.code, message, type: 'McpError' };
    if (error.data !== undefined) described.data = error.data;
    return described;
  }
  if (error instanceof Error) return { code: null, message: error.message, type: error.name };
  return { code: null, message: String(error), type: typeof error };
}

// ------------------------------------------------------------ elicitation

// A value that satisfies a (flat, primitive) elicitation property schema.
function sampleValue(schema) {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (Array.isArray(schema.oneOf) && schema.oneOf[0]?.const !== undefined) return schema.oneOf[0].const;
  if (schema.default !== undefined) return schema.default;
  switch (schema.type) {
    case 'boolean':
      return true;
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'array':
      return [];
    case 'string':
      if (schema.format === 'email') return 'test@example.com';
      if (schema.format === 'uri') return 'https://example.com/';
      if (schema.format === 'date') return '2025-01-01';
      if (schema.format === 'date-time') return '2025-01-01T00:00:00Z';
      return 'test';
    default:
      return null;
  }
}

function defaultElicitResult(params) {
  const properties = params.requestedSchema?.properties ?? {};
  const entries = Object.entries(properties).map(([key, schema]) => [key, sampleValue(schema)]);
  const content = Object.fromEntries(entries);
  return { action: 'accept', content };
}

// ------------------------------------------------------------------ driver

class Driver {
  constructor(config) {
    this.config = config;
    this.responders = { sampling: {}, elicitation: {}, roots: {} };
    this.notificationsSeen = new Map();
    this.notificationWaiters = new Set();
    this.negotiatedVersion = null;
    this.client = this.buildClient();
    this.transport = this.buildTransport();
  }

  buildClient() {
    const declared = new Set(this.config.capabilities);
    const capabilities = {};
    if (declared.has('sampling')) capabilities.sampling = {};
    if (declared.has('elicitation')) capabilities.elicitation = { form: {}, url: {} };
    if (declared.has('roots')) capabilities.roots = { listChanged: true };

    const client = new Client(CLIENT_INFO, { capabilities });
    // The SDK refuses a handler for a capability the client did not declare.
    if (declared.has('sampling')) {
      client.setRequestHandler(CreateMessageRequestSchema, (request) =>
        this.answer('sampling', request, () => DEFAULT_SAMPLING_RESULT),
      );
    }
    if (declared.has('elicitation')) {
      client.setRequestHandler(ElicitRequestSchema, (request) =>
        this.answer('elicitation', request, () => defaultElicitResult(request.params)),
      );
    }
    if (declared.has('roots')) {
      client.setRequestHandler(ListRootsRequestSchema, (request) =>
        this.answer('roots', request, () => DEFAULT_ROOTS_RESULT),
      );
    }
    // Progress and cancellation are consumed by the SDK; every other notification lands here.
    client.fallbackNotificationHandler = async (notification) => this.onNotification(notification);
    client.onerror = (error) => emit({ event: 'transportError', message: describeError(error).message });
    return client;
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

  async answer(kind, request, fallback) {
    emit({ event: 'request', method: request.method, params: request.params ?? {} });
    const responder = this.responders[kind];
    if (responder.delayMs) await sleep(responder.delayMs);
    if (responder.error) {
      // Not an McpError: its message carries an "MCP error <code>: " prefix onto the wire.
      const { code, message, data } = responder.error;
      throw Object.assign(new Error(message), { code, data });
    }
    return responder.result ?? fallback();
  }

  onNotification(notification) {
    emit({ event: 'notification', method: notification.method, params: notification.params ?? null });
    const seen = this.notificationsSeen.get(notification.method) ?? [];
    seen.push(notification.params ?? null);
    this.notificationsSeen.set(notification.method, seen);
    for (const waiter of this.notificationWaiters) waiter();
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

  async close() {
    await this.client.close();
    emit({ event: 'closed' });
  }

  async run(steps) {
    for (const [index, step] of steps.entries()) {
      const record = { event: 'step', index, op: step.op };
      if (step.label !== undefined) record.label = step.label;
      const needed = step.ifCapability;
      if (needed && !this.client.getServerCapabilities()?.[needed]) {
        emit({ ...record, ok: null, skipped: `server lacks capability ${needed}` });
        continue;
      }
      const request = this.requestOptions(step, index);
      try {
        const result = await this.perform(step, request.options);
        emit({ ...record, ok: true, result: result ?? null });
      } catch (error) {
        if (error instanceof UsageError) throw error;
        const failed = { ...record, ok: false, error: describeError(error) };
        if (request.controller.signal.aborted) failed.cancelled = true;
        emit(failed);
      } finally {
        request.dispose();
      }
    }
  }

  // Per-request options: timeout, progress reporting, client-side cancellation.
  requestOptions(step, index) {
    const controller = new AbortController();
    // A listing step passes one signal to every page's request: no listener limit.
    setMaxListeners(0, controller.signal);
    const options = { timeout: step.timeoutMs ?? this.config.timeout, signal: controller.signal };
    const cancelOnProgress = step.cancelOnProgress === true ? 1 : step.cancelOnProgress;
    if (step.progress || cancelOnProgress) {
      let seen = 0;
      options.onprogress = (progress) => {
        emit({ event: 'progress', index, ...progress });
        seen += 1;
        if (cancelOnProgress && seen >= cancelOnProgress) controller.abort(CANCEL_REASON);
      };
    }
    let timer;
    if (step.cancelAfterMs !== undefined) {
      timer = setTimeout(() => controller.abort(CANCEL_REASON), step.cancelAfterMs);
    }
    return { controller, options, dispose: () => clearTimeout(timer) };
  }

  async perform(step, options) {
    const client = this.client;
    switch (step.op) {
      case 'ping':
        return client.ping(options);
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
      case 'readResource':
        return client.readResource(withMeta(step, { uri: step.uri }), options);
      case 'subscribeResource':
        return client.subscribeResource({ uri: step.uri }, options);
      case 'unsubscribeResource':
        return client.unsubscribeResource({ uri: step.uri }, options);
      case 'getPrompt':
        return client.getPrompt(withMeta(step, { name: step.name, arguments: step.arguments }), options);
      case 'complete':
        return client.complete(completeParams(step), options);
      case 'setLoggingLevel':
        return client.setLoggingLevel(step.level, options);
      case 'request':
        return client.request({ method: step.method, params: step.params }, ResultSchema, options);
      case 'notify':
        await client.notification({ method: step.method, params: step.params });
        return null;
      case 'sendRootsListChanged':
        await client.sendRootsListChanged();
        return null;
      case 'onSampling':
        return this.configure('sampling', step);
      case 'onElicit':
        return this.configure('elicitation', step);
      case 'onRoots':
        return this.configure('roots', step);
      case 'waitFor':
        return this.waitFor(step);
      case 'sleep':
        await sleep(step.ms ?? 0);
        return null;
      default:
        throw new UsageError(`unknown op ${JSON.stringify(step.op)}`);
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

  configure(kind, step) {
    this.responders[kind] = { result: step.result, error: step.error, delayMs: step.delayMs };
    return null;
  }

  // Wait until `count` (default 1) notifications of `method` have arrived since the start.
  waitFor(step) {
    const count = step.count ?? 1;
    const timeout = step.timeoutMs ?? this.config.timeout;
    const seen = () => this.notificationsSeen.get(step.method) ?? [];
    return new Promise((resolve, reject) => {
      const check = () => {
        if (seen().length < count) return false;
        this.notificationWaiters.delete(check);
        clearTimeout(timer);
        resolve({ method: step.method, count: seen().length, params: seen() });
        return true;
      };
      const timer = setTimeout(() => {
        this.notificationWaiters.delete(check);
        reject(new Error(`waited ${timeout} ms for ${count} x ${step.method}, got ${seen().length}`));
      }, timeout);
      if (!check()) this.notificationWaiters.add(check);
    });
  }
}

function withMeta(step, params) {
  return step.meta === undefined ? params : { ...params, _meta: step.meta };
}

function completeParams(step) {
  const params = { ref: step.ref, argument: step.argument };
  if (step.context !== undefined) params.context = step.context;
  return params;
}

// -------------------------------------------------------------------- main

async function main() {
  let config;
  try {
    config = parseCommandLine(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`ts_client.mjs: ${error.message}\n`);
    return 2;
  }
  const driver = new Driver(config);
  try {
    await driver.connect();
  } catch (error) {
    emit({ event: 'connectFailed', error: describeError(error) });
    await driver.client.close().catch(() => {});
    return 1;
  }
  try {
    await driver.run(config.steps);
  } catch (error) {
    process.stderr.write(`ts_client.mjs: ${error.message}\n`);
    await driver.close();
    return 2;
  }
  await driver.close();
  return 0;
}

const status = await main();
// Exit once stdout has drained, even if the SDK left a timer behind.
process.stdout.write('', () => process.exit(status));
