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

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client, ProtocolError, SdkError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

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
  positiveMs,
  runDriver,
  sleep,
  withMeta,
} from './driver_common.mjs';

const CLIENT_INFO = { name: 'mcp-min-ts2-driver', version: '1.0.0' };
const MODES = ['auto', 'pin', 'prior', 'legacy'];
// ---------------------------------------------------------------- arguments

function parseOptions(argv) {
  const options = {
    mode: { type: 'string', default: 'auto' },
    pin: { type: 'string', default: '2026-07-28' },
    discover: { type: 'string' },
    'probe-timeout': { type: 'string' },
  };
  const { values, config } = parseCommandLine(argv, options, (values) => {
    if (!MODES.includes(values.mode)) {
      throw new UsageError(`--mode ${values.mode}: expected one of ${MODES.join(', ')}`);
    }
    if ((values.mode === 'prior') !== (values.discover !== undefined)) {
      throw new UsageError('--discover goes with --mode prior, and --mode prior needs it');
    }
  });
  const probeTimeout = values['probe-timeout'] === undefined
    ? undefined
    : positiveMs('--probe-timeout', values['probe-timeout']);
  return {
    ...config,
    mode: values.mode,
    pin: values.pin,
    discover: values.discover === undefined ? undefined : loadJson(values.discover),
    probeTimeout,
  };
}

function loadJson(text) {
  return JSON.parse(text.trimStart().startsWith('{') ? text : readFileSync(text, 'utf8'));
}

function sdkVersion() {
  // The exports map hides package.json; it sits one folder above the entry point's dist/.
  const entry = fileURLToPath(import.meta.resolve('@modelcontextprotocol/client'));
  return JSON.parse(readFileSync(join(entry, '..', '..', 'package.json'), 'utf8')).version;
}

// A URL elicitation has no form to fill: accepting it is the whole answer.
function elicitResult(params) {
  return params.mode === 'url' ? { action: 'accept' } : defaultElicitResult(params);
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

class Driver extends StepDriver {
  constructor(config) {
    super(config);
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
    const options = { capabilities: declaredCapabilities(new Set(this.config.capabilities)) };
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
    this.installHandlers(client, {
      sampling: 'sampling/createMessage',
      elicitation: 'elicitation/create',
      roots: 'roots/list',
    }, elicitResult);
    return client;
  }

  describeError(error) {
    if (error instanceof ProtocolError) {
      const described = { code: error.code, message: error.message, type: 'ProtocolError' };
      if (error.data !== undefined) described.data = error.data;
      return described;
    }
    if (error instanceof SdkError) {
      // A local failure (timeout, cancellation, a method the era lacks): no JSON-RPC code.
      const described = {
        code: null, sdkCode: error.code, message: error.message, type: 'SdkError',
      };
      if (error.data !== undefined) described.data = error.data;
      return described;
    }
    if (error instanceof Error) return { code: null, message: error.message, type: error.name };
    return { code: null, message: String(error), type: typeof error };
  }

  handlerError({ code, message, data }) {
    return new ProtocolError(code, message, data);
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

  // The client hands listen events to the ordinary handlers; the tag tells whose they are.
  noteNotification(notification, params) {
    const tag = params?._meta?.[SUBSCRIPTION_ID];
    const type = LISTEN_EVENTS[notification.method];
    for (const listening of this.listens.values()) {
      if (type === undefined || listening.id !== tag) continue;
      const record = { type };
      if (typeof params.uri === 'string') record.uri = params.uri;
      listening.events.push(record);
      emit({ event: 'listenEvent', listen: listening.name, ...record });
    }
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
    await super.close();
  }

  requestOptions(step, index) {
    const request = super.requestOptions(step, index);
    if (step.cacheMode !== undefined) request.options.cacheMode = step.cacheMode;
    return request;
  }

  async perform(step, options) {
    const client = this.client;
    if (Object.hasOwn(LIST_METHODS, step.op)) return this.list(step, options);
    switch (step.op) {
      case 'discover':
        return client.discover(options);
      case 'callTool':
        return client.callTool(
          withMeta(step, { name: step.name, arguments: step.arguments }),
          options,
        );
      case 'complete':
        return client.complete(withMeta(step, completeParams(step)), options);
      case 'request':
        return client.request({ method: step.method, params: step.params }, ANY_RESULT, options);
      case 'listen':
        return this.listen(step, options);
      case 'stopListen':
        return this.stopListen(step);
      default:
        return super.perform(step, options);
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

  // Wait for `count` (default 1) notifications of `method` since the start, or with
  // "listen", for that many events on the listen of that name.
  waitFor(step) {
    if (step.listen === undefined) return super.waitFor(step);
    const listening = this.listens.get(step.listen);
    if (listening === undefined) throw new UsageError(`waitFor: no open listen ${step.listen}`);
    const seen = () => listening.events;
    return this.waitUntil(step, seen, `events on listen ${step.listen}`, () => (
      { listen: step.listen, count: seen().length, events: [...seen()] }));
  }
}

await runDriver('ts2_client.mjs', parseOptions, Driver);
