// What the TypeScript drivers (ts_client.mjs, ts2_client.mjs) share: the command line,
// the scenario, the records printed on stdout, the answers to server requests, and the
// step runner. Each driver subclasses StepDriver with what its SDK does its own way.

import { setMaxListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = dirname(fileURLToPath(import.meta.url));
export const ALL_CAPABILITIES = ['sampling', 'elicitation', 'roots'];
const CANCEL_REASON = 'cancelled by test driver';

// What the client answers to server-initiated requests unless a step
// ("onSampling", "onElicit", "onRoots") configures something else.
export const DEFAULT_SAMPLING_RESULT = {
  role: 'assistant',
  content: { type: 'text', text: 'mock reply' },
  model: 'mock-model',
  stopReason: 'endTurn',
};
export const DEFAULT_ROOTS_RESULT = {
  roots: [{ uri: 'file:///tmp/mcp-min-root', name: 'test root' }],
};

// -------------------------------------------------- what the TypeScript drivers share

// The list methods a driver walks page by page: step -> [method, result key].
export const LIST_METHODS = {
  listTools: ['tools/list', 'tools'],
  listResources: ['resources/list', 'resources'],
  listResourceTemplates: ['resources/templates/list', 'resourceTemplates'],
  listPrompts: ['prompts/list', 'prompts'],
};
export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
export const LISTEN_FILTER_KEYS = [
  'toolsListChanged',
  'promptsListChanged',
  'resourcesListChanged',
  'resourceSubscriptions',
];
// Named as the Python SDK names its listen events, so all drivers print the same records.
export const LISTEN_EVENTS = {
  'notifications/tools/list_changed': 'ToolsListChanged',
  'notifications/prompts/list_changed': 'PromptsListChanged',
  'notifications/resources/list_changed': 'ResourcesListChanged',
  'notifications/resources/updated': 'ResourceUpdated',
};
// McpSubscription.closed -> the "end" py_client.py reports.
export const LISTEN_ENDS = { local: 'stopped', graceful: 'closed', remote: 'lost' };
// The v2 client's request() wants a result schema for a method outside the spec; this one
// takes any result.
export const ANY_RESULT = {
  '~standard': { version: 1, vendor: 'mcp-min-driver', validate: (value) => ({ value }) },
};

export class UsageError extends Error {}

export function emit(record) {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------- arguments

// The options both drivers take, with `options` (parseArgs specs) of the driver's own.
// `check(values)` validates those before the common ones are read. Returns the parsed
// values and the common part of the configuration.
export function parseCommandLine(argv, options, check) {
  const split = argv.indexOf('--');
  if (split === -1 || split === argv.length - 1) {
    throw new UsageError('missing "-- SERVER_CMD [ARG...]"');
  }
  const { values, positionals } = parseArgs({
    args: argv.slice(0, split),
    allowPositionals: true,
    options: {
      ...options,
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
  check(values);
  const timeout = positiveMs('--timeout', values.timeout);
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
  const config = {
    steps: loadSteps(positionals[0]),
    command: argv[split + 1],
    args: argv.slice(split + 2),
    timeout,
    env,
    cwd: values.cwd,
    capabilities,
    trace: values.trace,
  };
  return { values, config };
}

export function positiveMs(option, text) {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) {
    throw new UsageError(`${option} ${text}: not a positive number of milliseconds`);
  }
  return value;
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

// The client capabilities to declare for the names given with --capabilities.
export function declaredCapabilities(declared) {
  const capabilities = {};
  if (declared.has('sampling')) capabilities.sampling = {};
  if (declared.has('elicitation')) capabilities.elicitation = { form: {}, url: {} };
  if (declared.has('roots')) capabilities.roots = { listChanged: true };
  return capabilities;
}

// ------------------------------------------------------------ elicitation

// A value that satisfies a (flat, primitive) elicitation property schema.
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

// Accept a form elicitation with a sample value for each of its properties.
export function defaultElicitResult(params) {
  const properties = params.requestedSchema?.properties ?? {};
  const entries = Object.entries(properties).map(([key, schema]) => [key, sampleValue(schema)]);
  return { action: 'accept', content: Object.fromEntries(entries) };
}

// ----------------------------------------------------------------- steps

export function withMeta(step, params) {
  return step.meta === undefined ? params : { ...params, _meta: step.meta };
}

export function completeParams(step) {
  const params = { ref: step.ref, argument: step.argument };
  if (step.context !== undefined) params.context = step.context;
  return params;
}

// The step runner. A subclass sets this.client, and gives describeError(error),
// connect(), handlerError(error) (what a configured responder error throws) and perform()
// for the ops its SDK does its own way, falling back to super.perform() for the others.
export class StepDriver {
  constructor(config) {
    this.config = config;
    this.responders = { sampling: {}, elicitation: {}, roots: {} };
    this.notificationsSeen = new Map();
    this.notificationWaiters = new Set();
  }

  // Answer server requests (`requests`: capability -> what setRequestHandler takes for
  // it, a schema or a method) for each capability the client declares; the SDK refuses
  // a handler for a capability the client did not declare. Every other notification
  // than progress and cancellation (which the SDK consumes) reaches onNotification.
  installHandlers(client, requests, elicitResult = defaultElicitResult) {
    const declared = new Set(this.config.capabilities);
    const fallbacks = {
      sampling: () => DEFAULT_SAMPLING_RESULT,
      elicitation: (request) => elicitResult(request.params),
      roots: () => DEFAULT_ROOTS_RESULT,
    };
    for (const kind of ALL_CAPABILITIES) {
      if (!declared.has(kind)) continue;
      client.setRequestHandler(requests[kind], (request) =>
        this.answer(kind, request, () => fallbacks[kind](request)),
      );
    }
    client.fallbackNotificationHandler = async (notification) => this.onNotification(notification);
    client.onerror = (error) => {
      emit({ event: 'transportError', message: this.describeError(error).message });
    };
  }

  async answer(kind, request, fallback) {
    emit({ event: 'request', method: request.method, params: request.params ?? {} });
    const responder = this.responders[kind];
    if (responder.delayMs) await sleep(responder.delayMs);
    if (responder.error) throw this.handlerError(responder.error);
    return responder.result ?? fallback();
  }

  onNotification(notification) {
    const params = notification.params ?? null;
    emit({ event: 'notification', method: notification.method, params });
    const seen = this.notificationsSeen.get(notification.method) ?? [];
    seen.push(params);
    this.notificationsSeen.set(notification.method, seen);
    this.noteNotification(notification, params);
    for (const waiter of this.notificationWaiters) waiter();
  }

  // A subclass's own bookkeeping of a notification, before waitFor steps look again.
  noteNotification() {}

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
        const failed = { ...record, ok: false, error: this.describeError(error) };
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

  // The ops both SDKs do the same way.
  async perform(step, options) {
    const client = this.client;
    switch (step.op) {
      case 'ping':
        return client.ping(options);
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
      case 'setLoggingLevel':
        return client.setLoggingLevel(step.level, options);
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

  configure(kind, step) {
    this.responders[kind] = { result: step.result, error: step.error, delayMs: step.delayMs };
    return null;
  }

  // Wait until `count` (default 1) notifications of `method` have arrived since the start.
  waitFor(step) {
    const seen = () => this.notificationsSeen.get(step.method) ?? [];
    return this.waitUntil(step, seen, step.method, () => (
      { method: step.method, count: seen().length, params: seen() }));
  }

  // Resolve with done() once seen() holds `count` (default 1) items; reject on timeout.
  waitUntil(step, seen, what, done) {
    const count = step.count ?? 1;
    const timeout = step.timeoutMs ?? this.config.timeout;
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

// -------------------------------------------------------------------- main

// Parse the command line, connect, run the steps, close; exit with the status the
// drivers document (0 ran, 1 no connection, 2 usage error) once stdout has drained, even
// if the SDK left a timer behind.
export async function runDriver(name, parse, DriverClass) {
  const status = await drive(name, parse, DriverClass);
  process.stdout.write('', () => process.exit(status));
}

async function drive(name, parse, DriverClass) {
  let config;
  try {
    config = parse(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${name}: ${error.message}\n`);
    return 2;
  }
  const driver = new DriverClass(config);
  try {
    await driver.connect();
  } catch (error) {
    emit({ event: 'connectFailed', error: driver.describeError(error) });
    await driver.client.close().catch(() => {});
    return 1;
  }
  try {
    await driver.run(config.steps);
  } catch (error) {
    process.stderr.write(`${name}: ${error.message}\n`);
    await driver.close();
    return 2;
  }
  await driver.close();
  return 0;
}
