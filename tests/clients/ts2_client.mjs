#!/usr/bin/env node
// Drive an MCP stdio server with the official TypeScript v2 client
// (@modelcontextprotocol/client), which speaks the 2026-07-28 era.
//
//   node tests/clients/ts2_client.mjs [OPTIONS] SCENARIO -- SERVER_CMD [ARG...]
//
// SCENARIO and the records printed on stdout are those of ts_client.mjs (see
// README.md beside this file), with the 2026-07-28 steps of py_client.py
// ("listen", "stopListen", "waitFor" with "listen") and a "discover" step; the
// "connected" record also gives the era, the discover result, and the process
// ids of the session and of the probe.
//
// Options:
//   --mode M            how the client picks the era:
//                         auto    versionNegotiation {mode: 'auto'}: a
//                                 server/discover probe, legacy fallback
//                         pin     versionNegotiation {mode: {pin: VERSION}}:
//                                 the probe must offer VERSION
//                         prior   connect(transport, {prior: {kind: 'modern',
//                                 discover}}): no probe at all (needs --discover)
//                         legacy  the client's default: initialize
//   --pin VERSION       the version --mode pin asks for (default 2026-07-28)
//   --discover JSON     the DiscoverResult --mode prior adopts (JSON text or a
//                       file), e.g. the "discover" of an earlier "connected"
//   --probe-timeout MS  the probe's own timeout (default: --timeout)
//   --timeout MS        per-request timeout (default 30000)
//   --env NAME=VALUE    extra server environment (repeatable)
//   --cwd DIR           working directory of the server
//   --capabilities L    sampling,elicitation,roots (default all) or "none"
//   --trace             print every JSON-RPC message of the session, and of
//                       any probe process ("probeWire" records)
//
// Exit status: 0 when every step ran (whatever each returned), 1 when the
// connection could not be set up, 2 on a usage error.

import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Client, ProtocolError, SdkError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLIENT_INFO = { name: 'mcp-min-ts2-driver', version: '1.0.0' };
const ALL_CAPABILITIES = ['sampling', 'elicitation', 'roots'];
const MODES = ['auto', 'pin', 'prior', 'legacy'];
const CANCEL_REASON = 'cancelled by test driver';
const LIST_METHODS = {
  listTools: ['tools/list', 'tools'],
  listResources: ['resources/list', 'resources'],
  listResourceTemplates: ['resources/templates/list', 'resourceTemplates'],
  listPrompts: ['prompts/list', 'prompts'],
};

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const LISTEN_FILTER_KEYS = [
  'toolsListChanged',
  'promptsListChanged',
  'resourcesListChanged',
  'resourceSubscriptions',
];
// Named as the Python SDK names its listen events, so both drivers print the same records.
const LISTEN_EVENTS = {
  'notifications/tools/list_changed': 'ToolsListChanged',
  'notifications/prompts/list_changed': 'PromptsListChanged',
  'notifications/resources/list_changed': 'ResourcesListChanged',
  'notifications/resources/updated': 'ResourceUpdated',
};
// McpSubscription.closed -> the "end" py_client.py reports.
const LISTEN_ENDS = { local: 'stopped', graceful: 'closed', remote: 'lost' };

const DEFAULT_SAMPLING_RESULT = {
  role: 'assistant',
  content: { type: 'text', text: 'mock reply' },
  model: 'mock-model',
  stopReason: 'endTurn',
};
const DEFAULT_ROOTS_RESULT = { roots: [{ uri: 'file:///tmp/mcp-min-root', name: 'test root' }] };

// request() wants a result schema for a method outside the spec; this one takes any result.
const ANY_RESULT = {
  '~standard': { version: 1, vendor: 'mcp-min-driver', validate: (value) => ({ value }) },
};

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
      mode: { type: 'string', default: 'auto' },
      pin: { type: 'string', default: '2026-07-28' },
      discover: { type: 'string' },
      'probe-timeout': { type: 'string' },
      timeout: { type: 'string', default: '30000' },
      env: { type: 'string', multiple: true, default: [] },
      cwd: { type: 'string' },
      capabilities: { type: 'string', default: ALL_CAPABILITIES.join(',') },
      trace: { type: 'boolean', default: false },
    },
  });
  if (positionals.length !== 1) {
    throw new UsageError('expected exactly one SCENARIO before "--"');
  }
  if (!MODES.includes(values.mode)) {
    throw new UsageError(`--mode ${values.mode}: expected one of ${MODES.join(', ')}`);
  }
  if ((values.mode === 'prior') !== (values.discover !== undefined)) {
    throw new UsageError('--discover goes with --mode prior, and --mode prior needs it');
  }
  const timeout = positiveMs('--timeout', values.timeout);
  const probeTimeout = values['probe-timeout'] === undefined
    ? undefined
    : positiveMs('--probe-timeout', values['probe-timeout']);
  const env = {};
  for (const pair of values.env) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--env ${pair}: expected NAME=VALUE`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const capabilities = values.capabilities === 'none'
    ? []
    : values.capabilities.split(',').filter(Boolean);
  for (const name of capabilities) {
    if (!ALL_CAPABILITIES.includes(name)) throw new UsageError(`unknown capability ${name}`);
  }
  return {
    steps: loadSteps(positionals[0]),
    command: argv[split + 1],
    args: argv.slice(split + 2),
    mode: values.mode,
    pin: values.pin,
    discover: values.discover === undefined ? undefined : loadJson(values.discover),
    probeTimeout,
    timeout,
    env,
    cwd: values.cwd,
    capabilities,
    trace: values.trace,
  };
}

function positiveMs(option, text) {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new UsageError(`${option} ${text}: not a positive number of milliseconds`);
  }
  return value;
}

function loadJson(text) {
  return JSON.parse(text.trimStart().startsWith('{') ? text : readFileSync(text, 'utf8'));
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
  // The exports map hides package.json; it sits one folder above the entry point's dist/.
  const entry = fileURLToPath(import.meta.resolve('@modelcontextprotocol/client'));
  return JSON.parse(readFileSync(join(entry, '..', '..', 'package.json'), 'utf8')).version;
}

// ------------------------------------------------------------------ errors

function describeError(error) {
  if (error instanceof ProtocolError) {
    const described = { code: error.code, message: error.message, type: 'ProtocolError' };
    if (error.data !== undefined) described.data = error.data;
    return described;
  }
  if (error instanceof SdkError) {
    // A local failure (timeout, cancellation, a method the era lacks): no JSON-RPC code.
    const described = { code: null, sdkCode: error.code, message: error.message, type: 'SdkError' };
    if (error.data !== undefined) described.data = error.data;
    return described;
  }
  if (error instanceof Error) return { code: null, message: error.message, type: error.name };
  return { code: null, message: String(error), type: typeof error };
}

// ------------------------------------------------------------ elicitation

function sampleValue(schema) {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (Array.isArray(schema.oneOf) && schema.oneOf[0]?.const !== undefined) {
    return schema.oneOf[0].const;
  }
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
  if (params.mode === 'url') return { action: 'accept' };
  const properties = params.requestedSchema?.properties ?? {};
  const entries = Object.entries(properties).map(([key, schema]) => [key, sampleValue(schema)]);
  return { action: 'accept', content: Object.fromEntries(entries) };
}

// -------------------------------------------------------------- the wire

// Every StdioClientTransport of this process, the client's own probe sibling included, is
// tapped at the prototype: the sibling is built inside the client (from the session
// transport's constructor), so patching one instance would not reach it. Sent messages are
// seen as the transport writes them; received ones as its line buffer yields them, before
// the client decides whether to drop them.
function tapStdioTransports(onWire, onStarted) {
  const proto = StdioClientTransport.prototype;
  const { send, start } = proto;
  proto.send = function tappedSend(message, options) {
    onWire(this, 'send', message);
    return send.call(this, message, options);
  };
  proto.start = async function tappedStart() {
    const buffer = this._readBuffer;
    const read = buffer.readMessage.bind(buffer);
    buffer.readMessage = () => {
      const message = read();
      if (message !== null) onWire(this, 'recv', message);
      return message;
    };
    await start.call(this);
    onStarted(this);
  };
}

// ------------------------------------------------------------------ driver

class Driver {
  constructor(config) {
    this.config = config;
    this.responders = { sampling: {}, elicitation: {}, roots: {} };
    this.notificationsSeen = new Map();
    this.notificationWaiters = new Set();
    this.sentByMethod = new Map();
    this.listens = new Map();
    this.lastListenId = null;
    this.probePids = [];
    this.client = this.buildClient();
    this.transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      cwd: config.cwd,
      stderr: 'inherit',
    });
    tapStdioTransports(
      (transport, dir, message) => this.onWire(transport, dir, message),
      (transport) => {
        if (transport !== this.transport) this.probePids.push(transport.pid);
      },
    );
  }

  buildClient() {
    const declared = new Set(this.config.capabilities);
    const capabilities = {};
    if (declared.has('sampling')) capabilities.sampling = {};
    if (declared.has('elicitation')) capabilities.elicitation = { form: {}, url: {} };
    if (declared.has('roots')) capabilities.roots = { listChanged: true };

    const options = { capabilities };
    if (this.config.mode === 'auto' || this.config.mode === 'pin') {
      const mode = this.config.mode === 'auto' ? 'auto' : { pin: this.config.pin };
      options.versionNegotiation = { mode };
      if (this.config.probeTimeout) options.versionNegotiation.probe = {
        timeoutMs: this.config.probeTimeout,
      };
    }
    const client = new Client(CLIENT_INFO, options);
    // The same handlers answer server requests (legacy era) and the input requests of an
    // input_required result (2026-07-28), which the client fulfils before it retries.
    if (declared.has('sampling')) {
      client.setRequestHandler('sampling/createMessage', (request) =>
        this.answer('sampling', request, () => DEFAULT_SAMPLING_RESULT),
      );
    }
    if (declared.has('elicitation')) {
      client.setRequestHandler('elicitation/create', (request) =>
        this.answer('elicitation', request, () => defaultElicitResult(request.params)),
      );
    }
    if (declared.has('roots')) {
      client.setRequestHandler('roots/list', (request) =>
        this.answer('roots', request, () => DEFAULT_ROOTS_RESULT),
      );
    }
    client.fallbackNotificationHandler = async (notification) => this.onNotification(notification);
    client.onerror = (error) => {
      emit({ event: 'transportError', message: describeError(error).message });
    };
    return client;
  }

  onWire(transport, dir, message) {
    const session = transport === this.transport;
    if (session && dir === 'send' && message.method !== undefined && message.id !== undefined) {
      this.sentByMethod.set(message.method, (this.sentByMethod.get(message.method) ?? 0) + 1);
      // McpSubscription does not tell its id: it is that of the request on the wire.
      if (message.method === 'subscriptions/listen') this.lastListenId = message.id;
    }
    if (!this.config.trace) return;
    if (session) emit({ event: 'wire', dir, message });
    else emit({ event: 'probeWire', dir, pid: transport.pid, message });
  }

  async answer(kind, request, fallback) {
    emit({ event: 'request', method: request.method, params: request.params ?? {} });
    const responder = this.responders[kind];
    if (responder.delayMs) await sleep(responder.delayMs);
    if (responder.error) {
      const { code, message, data } = responder.error;
      throw new ProtocolError(code, message, data);
    }
    return responder.result ?? fallback();
  }

  onNotification(notification) {
    const params = notification.params ?? null;
    emit({ event: 'notification', method: notification.method, params });
    const seen = this.notificationsSeen.get(notification.method) ?? [];
    seen.push(params);
    this.notificationsSeen.set(notification.method, seen);
    // The client hands listen events to the ordinary handlers; the tag tells whose they are.
    const tag = params?._meta?.[SUBSCRIPTION_ID];
    const type = LISTEN_EVENTS[notification.method];
    for (const listening of this.listens.values()) {
      if (type === undefined || listening.id !== tag) continue;
      const record = { type };
      if (typeof params.uri === 'string') record.uri = params.uri;
      listening.events.push(record);
      emit({ event: 'listenEvent', listen: listening.name, ...record });
    }
    for (const waiter of this.notificationWaiters) waiter();
  }

  async connect() {
    const options = { timeout: this.config.timeout };
    if (this.config.mode === 'prior') {
      options.prior = { kind: 'modern', discover: this.config.discover };
    }
    await this.client.connect(this.transport, options);
    const era = this.client.getProtocolEra() ?? null;
    let handshake = 'initialize';
    if (this.config.mode === 'prior') handshake = 'prior';
    else if (era === 'modern') handshake = 'discover';
    emit({
      event: 'connected',
      client: 'ts2',
      sdkVersion: sdkVersion(),
      mode: this.config.mode,
      handshake,
      era,
      protocolVersion: this.client.getNegotiatedProtocolVersion() ?? null,
      serverInfo: this.client.getServerVersion() ?? null,
      capabilities: this.client.getServerCapabilities() ?? null,
      instructions: this.client.getInstructions() ?? null,
      discover: this.client.getDiscoverResult() ?? null,
      sessionPid: this.transport.pid,
      probePids: this.probePids,
    });
  }

  async close() {
    for (const name of [...this.listens.keys()]) await this.stopListen({ listen: name });
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

  requestOptions(step, index) {
    const controller = new AbortController();
    setMaxListeners(0, controller.signal);
    const options = { timeout: step.timeoutMs ?? this.config.timeout, signal: controller.signal };
    if (step.cacheMode !== undefined) options.cacheMode = step.cacheMode;
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
    if (Object.hasOwn(LIST_METHODS, step.op)) return this.list(step, options);
    switch (step.op) {
      case 'ping':
        return client.ping(options);
      case 'discover':
        return client.discover(options);
      case 'callTool':
        return client.callTool(
          withMeta(step, { name: step.name, arguments: step.arguments }),
          options,
        );
      case 'readResource':
        return client.readResource(withMeta(step, { uri: step.uri }), options);
      case 'subscribeResource':
        return client.subscribeResource({ uri: step.uri }, options);
      case 'unsubscribeResource':
        return client.unsubscribeResource({ uri: step.uri }, options);
      case 'getPrompt':
        return client.getPrompt(
          withMeta(step, { name: step.name, arguments: step.arguments }),
          options,
        );
      case 'complete':
        return client.complete(withMeta(step, completeParams(step)), options);
      case 'setLoggingLevel':
        return client.setLoggingLevel(step.level, options);
      case 'request':
        return client.request({ method: step.method, params: step.params }, ANY_RESULT, options);
      case 'notify':
        await client.notification({ method: step.method, params: step.params });
        return null;
      case 'sendRootsListChanged':
        await client.sendRootsListChanged();
        return null;
      case 'listen':
        return this.listen(step, options);
      case 'stopListen':
        return this.stopListen(step);
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

  // The client walks every page itself when no cursor is given ("all", the default): the
  // result says how many requests that took. "all": false without a cursor asks for the
  // first page alone, as a plain request.
  async list(step, options) {
    const [method, key] = LIST_METHODS[step.op];
    if (step.cursor !== undefined) {
      return this.client[step.op](withMeta(step, { cursor: step.cursor }), options);
    }
    if (step.all === false) {
      return this.client.request({ method, params: withMeta(step, {}) }, options);
    }
    const before = this.sentByMethod.get(method) ?? 0;
    const params = step.meta === undefined ? undefined : withMeta(step, {});
    const result = await this.client[step.op](params, options);
    return { ...result, [key]: result[key], pages: (this.sentByMethod.get(method) ?? 0) - before };
  }

  // subscriptions/listen: open until a stopListen step names it (by its "name", else label).
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
    const end = LISTEN_ENDS[await listening.subscription.closed];
    return { events: listening.events, end };
  }

  configure(kind, step) {
    this.responders[kind] = { result: step.result, error: step.error, delayMs: step.delayMs };
    return null;
  }

  // Wait for `count` (default 1) notifications of `method` since the start, or with
  // "listen", for that many events on the listen of that name.
  waitFor(step) {
    const count = step.count ?? 1;
    const timeout = step.timeoutMs ?? this.config.timeout;
    let seen = () => this.notificationsSeen.get(step.method) ?? [];
    let what = step.method;
    if (step.listen !== undefined) {
      const listening = this.listens.get(step.listen);
      if (listening === undefined) throw new UsageError(`waitFor: no open listen ${step.listen}`);
      seen = () => listening.events;
      what = `events on listen ${step.listen}`;
    }
    const done = () => (step.listen === undefined
      ? { method: step.method, count: seen().length, params: seen() }
      : { listen: step.listen, count: seen().length, events: [...seen()] });
    return new Promise((resolve, reject) => {
      const check = () => {
        if (seen().length < count) return false;
        this.notificationWaiters.delete(check);
        clearTimeout(timer);
        resolve(done());
        return true;
      };
      const timer = setTimeout(() => {
        this.notificationWaiters.delete(check);
        reject(new Error(`waited ${timeout} ms for ${count} x ${what}, got ${seen().length}`));
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
    process.stderr.write(`ts2_client.mjs: ${error.message}\n`);
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
    process.stderr.write(`ts2_client.mjs: ${error.message}\n`);
    await driver.close();
    return 2;
  }
  await driver.close();
  return 0;
}

const status = await main();
process.stdout.write('', () => process.exit(status));
