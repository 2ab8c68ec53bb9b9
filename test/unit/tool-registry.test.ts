import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolError, type SharedContext, type ToolContext, type ToolLogger } from '../../src/core/tool-interface';
import { ToolRegistry, type LoadedAction, type ToolSet } from '../../src/core/tool-registry';
import { BUNDLED_TOOLS } from '../support/fixtures';

interface LogCall {
  level: 'debug' | 'info' | 'warn' | 'error';
  obj: object | string;
  msg: string | undefined;
}

function captureLogger(): { logger: ToolLogger; calls: LogCall[]; text: (level: LogCall['level']) => string } {
  const calls: LogCall[] = [];
  const at =
    (level: LogCall['level']) =>
    (obj: object | string, msg?: string): void => {
      calls.push({ level, obj, msg });
    };
  const logger: ToolLogger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  const text = (level: LogCall['level']): string =>
    calls
      .filter((c) => c.level === level)
      .map((c) => `${JSON.stringify(c.obj)} ${c.msg ?? ''}`)
      .join('\n');
  return { logger, calls, text };
}

/** Tools under test never reach the shared context here; touching it is a test failure. */
const noSharedContext = new Proxy({} as SharedContext, {
  get: () => {
    throw new Error('shared context not available in this test');
  },
});

function ctxFor(action: LoadedAction, args: Record<string, unknown>): ToolContext {
  return {
    conversationId: 'conv-1',
    toolName: action.tool,
    action: action.name,
    args,
    sharedContext: noSharedContext,
    logger: captureLogger().logger,
    exportDir: join(tmpdir(), 'unused-export-dir'),
  };
}

function action(set: ToolSet, qualifiedName: string): LoadedAction {
  const found = set.actions.find((a) => a.qualifiedName === qualifiedName);
  if (!found) throw new Error(`no action ${qualifiedName}`);
  return found;
}

async function runAction(set: ToolSet, qualifiedName: string, args: unknown): Promise<unknown> {
  const a = action(set, qualifiedName);
  const parsed = a.parseArgs(args);
  if (!parsed.ok) throw new Error(`args rejected: ${parsed.path}: ${parsed.message}`);
  return a.run(parsed.value, ctxFor(a, parsed.value));
}

/** Resolves on the first 'change' whose set satisfies `accept` (reloads may also fire for unrelated events). */
function nextChange(registry: ToolRegistry, accept: (set: ToolSet) => boolean): Promise<ToolSet> {
  return new Promise((resolve) => {
    const listener = (set: ToolSet): void => {
      if (!accept(set)) return;
      registry.off('change', listener);
      resolve(set);
    };
    registry.on('change', listener);
  });
}

const EXPECTED_LEVELS: Record<string, number> = {
  'analytics-tool/count-resources': 1,
  'analytics-tool/summarize-resource': 1,
  'calculator/add': 1,
  'calculator/multiply': 1,
  'data-tool/apply-batch': 2,
  'data-tool/create-resource': 2,
  'data-tool/delete-resource': 2,
  'data-tool/list-resources': 1,
  'data-tool/read-resource': 1,
  'data-tool/update-resource': 2,
  'example-tool/greet': 1,
  'export-tool/export-resource': 1,
  'export-tool/write-export': 3,
  'math-service/add': 1,
  'math-service/integrate': 1,
  'transform-tool/transform-resource': 2,
};

const FACTORY_TOOL = `
module.exports = ({ defineTool, defineAction, z }) =>
  defineTool({
    name: 'echo-tool',
    version: '2.1.0',
    description: 'Echoes its input',
    actions: {
      echo: defineAction({
        description: 'Echo the text back',
        level: 1,
        input: z.object({ text: z.string() }),
        handler: ({ text }, ctx) => ({ text, tool: ctx.toolName }),
      }),
    },
  });
`;

const CLASS_TOOL = `
module.exports = ({ BaseTool }) => {
  class MyTool extends BaseTool {
    constructor() {
      super({ name: 'my-tool', version: '1.0.0', capabilities: ['read-thing', 'frobnicate'] });
    }
    async execute(action, context) {
      if (action === 'read-thing') return { success: true, output: { id: context.args.id, action } };
      if (!context.args.level) return { success: false, error: 'Required parameter: level' };
      return { success: true, output: { frobnicated: context.args.level } };
    }
  }
  MyTool.identity = { name: 'my-tool', version: '1.0.0', capabilities: ['read-thing', 'frobnicate'] };
  return MyTool;
};
`;

const THROWING_TOOL = `throw new Error('boom at load time');`;

const BAD_NAME_TOOL = `
module.exports = ({ defineTool, defineAction, z }) =>
  defineTool({
    name: 'Bad_Tool',
    version: '1.0.0',
    description: 'Invalid name',
    actions: { go: defineAction({ description: 'x', level: 1, input: z.object({}), handler: () => 1 }) },
  });
`;

const DUPLICATE_TOOL = `
module.exports = ({ defineTool, defineAction, z }) =>
  defineTool({
    name: 'data-tool',
    version: '9.9.9',
    description: 'Impostor',
    actions: { steal: defineAction({ description: 'x', level: 1, input: z.object({}), handler: () => 1 }) },
  });
`;

function toolSource(name: string): string {
  return FACTORY_TOOL.replace("'echo-tool'", `'${name}'`);
}

describe('ToolRegistry: bundled tools', () => {
  let registry: ToolRegistry;
  let set: ToolSet;

  beforeAll(async () => {
    registry = new ToolRegistry({ hotReload: false, logger: captureLogger().logger });
    set = await registry.load();
  });
  afterAll(() => registry.close());

  it('loads the seven bundled tools, sorted by name', () => {
    expect(set.tools.map((t) => t.name)).toEqual(BUNDLED_TOOLS);
    expect(set.generation).toBe(1);
    expect(registry.ready).toBe(true);
    expect(registry.current()).toBe(set);
  });

  it('declares the expected actions with their levels and names', () => {
    const levels = Object.fromEntries(set.actions.map((a) => [a.qualifiedName, a.level]));
    expect(levels).toEqual(EXPECTED_LEVELS);
    for (const a of set.actions) {
      expect(a.qualifiedName).toBe(`${a.tool}/${a.name}`);
      expect(a.providerName).toBe(`${a.tool}_${a.name}`);
      expect(a.providerName).toMatch(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/);
      expect(a.description.length).toBeGreaterThan(10);
      expect(a.inputSchema.type).toBe('object');
      expect(a.inputSchema).not.toHaveProperty('$schema');
    }
    for (const tool of set.tools) {
      expect(tool.version).toBe('1.0.0');
      expect(tool.actions.map((a) => a.name)).toEqual([...tool.actions.map((a) => a.name)].sort());
    }
  });

  it('runs actions on parsed args', async () => {
    await expect(runAction(set, 'example-tool/greet', undefined)).resolves.toEqual({ message: 'Hello, world!' });
    await expect(runAction(set, 'example-tool/greet', { name: 'Ada' })).resolves.toEqual({ message: 'Hello, Ada!' });
    await expect(runAction(set, 'calculator/multiply', { a: 6, b: 7 })).resolves.toEqual({ result: 42 });
    // integral of 1 + 2x + 3x^2 from 0 to 2 = [x + x^2 + x^3] = 2 + 4 + 8
    await expect(
      runAction(set, 'math-service/integrate', { coefficients: [1, 2, 3], from: 0, to: 2 }),
    ).resolves.toEqual({ result: 14 });
  });

  it('reports the first failing field of the args', () => {
    expect(action(set, 'calculator/add').parseArgs({ a: 1 })).toMatchObject({ ok: false, path: 'b' });
    expect(action(set, 'math-service/integrate').parseArgs({ coefficients: [1, 'x'], from: 0, to: 1 })).toMatchObject({
      ok: false,
      path: 'coefficients.1',
    });
    expect(action(set, 'data-tool/create-resource').parseArgs({ name: 'a b', data: 1 })).toMatchObject({
      ok: false,
      path: 'name',
    });
    expect(action(set, 'data-tool/create-resource').parseArgs({ name: 'ok' })).toMatchObject({
      ok: false,
      path: 'data',
    });
    expect(action(set, 'calculator/add').parseArgs('not an object')).toMatchObject({ ok: false, path: 'args' });
  });
});

describe('ToolRegistry: TOOLS_DIR', () => {
  let dir: string;
  let registry: ToolRegistry | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tools-dir-'));
  });
  afterEach(async () => {
    await registry?.close();
    registry = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('loads the valid modules and skips the broken ones with a logged reason', async () => {
    await writeFile(join(dir, 'echo.js'), FACTORY_TOOL);
    await writeFile(join(dir, 'my-tool.cjs'), CLASS_TOOL);
    await writeFile(join(dir, 'broken.js'), THROWING_TOOL);
    await writeFile(join(dir, 'bad-name.js'), BAD_NAME_TOOL);
    await writeFile(join(dir, 'impostor.js'), DUPLICATE_TOOL);
    await writeFile(join(dir, '_helper.js'), THROWING_TOOL); // private helper: never loaded
    await writeFile(join(dir, 'echo.test.js'), THROWING_TOOL); // a test: never loaded
    await mkdir(join(dir, 'nested'));
    await writeFile(join(dir, 'nested', 'index.js'), toolSource('nested-tool'));
    const log = captureLogger();
    registry = new ToolRegistry({ extraDir: dir, hotReload: false, logger: log.logger });

    const set = await registry.load();

    const names = set.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['echo-tool', 'my-tool', 'nested-tool', 'data-tool']));
    expect(names).toHaveLength(10);
    expect(set.byName.get('data-tool')?.version).toBe('1.0.0'); // the bundled one won
    expect(set.byName.get('echo-tool')).toMatchObject({ version: '2.1.0', source: join(dir, 'echo.js') });
    const warnings = log.text('warn');
    expect(warnings).toMatch(/broken\.js.*boom at load time/);
    expect(warnings).toMatch(/bad-name\.js.*Bad_Tool.*kebab-case/);
    expect(warnings).toMatch(/impostor\.js.*"data-tool" is already provided/);
    expect(warnings).not.toMatch(/_helper|echo\.test/);
  });

  it('loads a seed-style class: levels from verbs, run() through execute()', async () => {
    await writeFile(join(dir, 'my-tool.js'), CLASS_TOOL);
    registry = new ToolRegistry({ extraDir: dir, hotReload: false, logger: captureLogger().logger });
    const set = await registry.load();

    const tool = set.byName.get('my-tool');
    expect(tool?.actions.map((a) => [a.name, a.level])).toEqual([
      ['frobnicate', 3],
      ['read-thing', 1],
    ]);
    expect(action(set, 'my-tool/read-thing').inputSchema.type).toBe('object');
    await expect(runAction(set, 'my-tool/read-thing', { id: 7 })).resolves.toEqual({ id: 7, action: 'read-thing' });
    await expect(runAction(set, 'my-tool/frobnicate', { level: 'max' })).resolves.toEqual({ frobnicated: 'max' });
    const failure = runAction(set, 'my-tool/frobnicate', {});
    await expect(failure).rejects.toBeInstanceOf(ToolError);
    await expect(failure).rejects.toMatchObject({ code: 'invalid_args', message: 'Required parameter: level' });
  });

  it('keeps the previous set when a reload fails', async () => {
    const bundled = await mkdtemp(join(tmpdir(), 'bundled-'));
    await writeFile(join(bundled, 'echo.js'), FACTORY_TOOL);
    const log = captureLogger();
    registry = new ToolRegistry({ bundledDir: bundled, hotReload: false, logger: log.logger });
    const before = await registry.load();
    await rm(bundled, { recursive: true, force: true });

    await expect(registry.reload()).rejects.toThrow();

    expect(registry.current()).toBe(before);
    expect(log.text('error')).toMatch(/keeping the previous tool set/);
  });

  it('throws from current() before the first load', () => {
    registry = new ToolRegistry({ extraDir: dir, hotReload: false, logger: captureLogger().logger });
    expect(registry.ready).toBe(false);
    expect(() => registry?.current()).toThrow(/not loaded/);
  });

  it('hot-reloads added and removed modules, swapping whole sets', async () => {
    registry = new ToolRegistry({ extraDir: dir, hotReload: true, debounceMs: 20, logger: captureLogger().logger });
    const first = await registry.load();
    const firstNames = first.tools.map((t) => t.name);
    expect(firstNames).not.toContain('hot-tool');

    const added = nextChange(registry, (set) => set.byName.has('hot-tool'));
    // Written under a hidden name, then renamed: the loader never sees a half-written file.
    await writeFile(join(dir, '.hot-tool.js.tmp'), toolSource('hot-tool'));
    await rename(join(dir, '.hot-tool.js.tmp'), join(dir, 'hot-tool.js'));
    const second = await added;

    expect(registry.current()).toBe(second);
    expect(second.generation).toBeGreaterThan(first.generation);
    await expect(runAction(second, 'hot-tool/echo', { text: 'hi' })).resolves.toEqual({ text: 'hi', tool: 'hot-tool' });
    // The old generation is untouched: callers holding it keep what they started with.
    expect(first.tools.map((t) => t.name)).toEqual(firstNames);
    expect(first.byName.has('hot-tool')).toBe(false);
    expect(first.generation).toBe(1);

    const removed = nextChange(registry, (set) => !set.byName.has('hot-tool'));
    await rm(join(dir, 'hot-tool.js'));
    const third = await removed;

    expect(registry.current()).toBe(third);
    expect(third.generation).toBeGreaterThan(second.generation);
    expect(second.byName.has('hot-tool')).toBe(true);
  }, 10_000);
});
