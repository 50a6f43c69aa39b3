// 6. Memory, in three variants (`--option memory.variant=fast|slow|paced|both`, default both: fast
// and slow; paced runs only when named).
//
// Fast: the peak resident set size of an engine process (VmHWM, its own: the sandbox runs in this
// process) during a full sweep of 20,000 and of 200,000 people from an unthrottled sandbox. The engine is
// started as `npm start` composes it, with the V8 flags `crm-sync start` runs with (bin/node-flags.js),
// on an empty database; its first run sweeps every resource from empty. For reference, the larger sweep
// again on Node's defaults (without those flags).
//
// Slow: the same first sync as users meet it: the real budget (50 requests per 10 s, in the sandbox and
// in the engine), pages of at most 250, latency on every upstream call (150 ms unless
// `memory.latency` says otherwise) and INCREMENTAL_SYNC_INTERVAL=10, so that routine incremental runs go
// on during the whole sweep (about 200 s for 200,000 people). What is counted is the engine's process
// tree, sampled every 250 ms: with `memory.database=given` (the default) the engine alone (its
// PostgreSQL is the benchmark's), its VmHWM as in the fast variant; with `memory.database=embedded` the
// engine starts its own PostgreSQL (no DATABASE_URL), and the figure is the PSS summed over the engine,
// the postmaster, its backends and its autovacuum and I/O workers: PSS counts PostgreSQL's shared
// buffers once, where RSS summed counts them in every process that touched them. The details keep the
// tree by kind of process at its peak (private and shared memory apart) and the engine's heap every
// 10 s from its /metrics.
//
// Paced: the budget lifted (as in fast) but every upstream call answered in 0.4-0.7 s (uniform,
// `memory.pace=400-700`), as an upstream whose index pages are slow at 200,000 records: the engine,
// not the budget, sets the pace, and a walk keeps its most pages in flight (lookahead.ts). Sampled as
// the slow variant samples (the engine's tree; heap every 10 s).
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NODE_FLAGS } from '../bin/node-flags.js'
import { type BehaviourPatch, type FaultsPatch, startSandbox } from '../sandbox/index.ts'
import { readRuns } from '../src/store/runs.ts'
import { type BenchDatabase, createBenchDatabase } from './support/database.ts'
import { spawnEngine } from './support/engines.ts'
import { runsSettled } from './support/mirror.ts'
import { sampleTree, type TreeMemory } from './support/process-tree.ts'
import { atMost, type Context, type Figure, type Scenario } from './support/scenario.ts'
import { round, sleep, waitFor } from './support/stats.ts'

const LIMIT_MB = 300
// "Not growing with the record count": ten times the records may cost at most this much more.
const GROWTH = 0.15

/** `startFlags`: false runs the engine on Node's defaults instead of the flags of `crm-sync start`. */
async function sweepPeak(ctx: Context, people: number, startFlags = true) {
  const sandbox = await startSandbox({
    seedSize: { people },
    behaviour: { crmRateLimit: null, reservationRateLimit: null },
  })
  const database = await createBenchDatabase(ctx.server, `memory_${people}`)
  try {
    const flags = startFlags ? NODE_FLAGS.join(' ') : "Node's defaults"
    ctx.log(`first sync of ${people} people in an engine process (${flags})`)
    const started = performance.now()
    const engine = await spawnEngine(sandbox, {
      databaseUrl: database.url,
      env: { CRM_RATE_LIMIT: '10000', RESERVATION_RATE_LIMIT: '10000', INCREMENTAL_SYNC_INTERVAL: '86400' },
      nodeOptions: ctx.nodeOptions,
      startFlags,
    })
    const startRss = engine.peakRss()
    try {
      await waitFor(
        async () => ((await runsSettled(database.db)) ? true : undefined),
        'the first sync',
        600_000,
        200,
      )
      const seconds = (performance.now() - started) / 1000
      const [run] = await readRuns(database.db, { limit: 1 })
      const swept = run?.resources.find((sweep) => sweep.resource === 'crm.people')
      if (run?.status !== 'succeeded') throw new Error(`the first sync ended ${run?.status}: ${run?.error}`)
      return {
        people,
        records: swept?.records ?? 0,
        seconds: round(seconds, 1),
        peakRssMb: engine.peakRss() / 2 ** 20,
        rssAfterStartMb: round(startRss / 2 ** 20),
        cpuSeconds: round(engine.cpuSeconds(), 1),
      }
    } finally {
      await engine.stop()
    }
  } finally {
    await database.drop()
    await sandbox.stop()
  }
}

const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef'

/** The upstream as users meet it, for the slow variant. */
const SLOW = {
  /** The public API's largest page; the engine asks for its default (500) and gets these. */
  maxPerpage: 250,
  /** The CRM's budget, enforced by the sandbox; the engine runs with its own default, the same. */
  crmRateLimit: { requests: 50, windowSeconds: 10 },
  reservationRateLimit: { requests: 50, windowSeconds: 10 },
  incrementalSeconds: 10,
}

/** Node's own view of the engine's memory, from its /metrics (prom-client's process metrics). */
export interface HeapReading {
  at: number
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  oldSpaceUsed: number
  newSpaceUsed: number
  largeObjectSpaceUsed: number
}

async function readHeap(engineUrl: string, at: number): Promise<HeapReading | null> {
  try {
    const text = await (await fetch(`${engineUrl}/metrics`)).text()
    const value = (name: string, labels = '') => {
      const line = text.split('\n').find((entry) => entry.startsWith(`${name}${labels} `))
      return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : Number.NaN
    }
    return {
      at,
      rss: value('process_resident_memory_bytes'),
      heapUsed: value('nodejs_heap_size_used_bytes'),
      heapTotal: value('nodejs_heap_size_total_bytes'),
      external: value('nodejs_external_memory_bytes'),
      oldSpaceUsed: value('nodejs_heap_space_size_used_bytes', '{space="old"}'),
      newSpaceUsed: value('nodejs_heap_space_size_used_bytes', '{space="new"}'),
      largeObjectSpaceUsed: value('nodejs_heap_space_size_used_bytes', '{space="large_object"}'),
    }
  } catch {
    return null
  }
}

interface RunSweep {
  resource: string
  status: string
  records: number
  pages: number
  api_requests: number
}

async function readRun(engineUrl: string, id: number) {
  const response = await fetch(`${engineUrl}/admin/runs/${id}`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  })
  if (!response.ok) return null
  return (await response.json()) as {
    id: number
    status: string
    error: string | null
    resources: RunSweep[]
  }
}

export interface SlowOptions {
  latencyMs: number
  /** Paced variant: every upstream call takes between these two (ms), uniform. */
  pace: [number, number]
  /** `given`: the bench's server as DATABASE_URL; `embedded`: the engine starts its own (in its tree). */
  database: 'given' | 'embedded'
  /** Seconds the engine keeps running (incremental runs every 10 s) after the sweep, still sampled. */
  afterSeconds: number
  /** Extra flags for the engine's Node (after those of `crm-sync start`), e.g. `--trace-gc`. */
  nodeOptions: string[]
  /** false: the engine's Node runs on its defaults instead of the flags of `crm-sync start`. */
  startFlags: boolean
}

/** What the engine's tree is measured against: the upstream's behaviour and the engine's settings. */
interface TreeUpstream {
  variant: 'slow' | 'paced'
  behaviour: BehaviourPatch
  faults: FaultsPatch
  env: Record<string, string>
  /** For the log and the settings. */
  describe: string
  budget: 'real' | 'lifted'
  /** Attachments seeded beside the people: one per `perPeople` people, files of `bytes`. */
  attachments?: { perPeople: number; bytes: { min: number; max: number } }
}

function slowUpstream(options: SlowOptions): TreeUpstream {
  return {
    variant: 'slow',
    behaviour: {
      crmRateLimit: SLOW.crmRateLimit,
      reservationRateLimit: SLOW.reservationRateLimit,
      maxPerpage: SLOW.maxPerpage,
    },
    faults: { crm: { latencyMs: options.latencyMs }, reservation: { latencyMs: options.latencyMs } },
    env: { INCREMENTAL_SYNC_INTERVAL: String(SLOW.incrementalSeconds) },
    describe:
      `budget ${SLOW.crmRateLimit.requests}/${SLOW.crmRateLimit.windowSeconds} s, pages of ${SLOW.maxPerpage}, ` +
      `${options.latencyMs} ms latency, incremental runs every ${SLOW.incrementalSeconds} s`,
    budget: 'real',
  }
}

// Files as reports and offers are: tens of kilobytes (the listings carry each one, Base64, in `data`).
const PACED_ATTACHMENTS = { perPeople: 10, bytes: { min: 40 * 1024, max: 80 * 1024 } }

/** The paced variant: the budget lifted (sandbox and engine), every call answered in `pace` ms. */
function pacedUpstream(options: SlowOptions): TreeUpstream {
  const [latencyMs, latencyMaxMs] = options.pace
  const slow = { latencyMs, latencyMaxMs }
  return {
    variant: 'paced',
    behaviour: { crmRateLimit: null, reservationRateLimit: null, maxPerpage: SLOW.maxPerpage },
    faults: { crm: slow, reservation: slow },
    // Otherwise the engine's defaults, as `crm-sync start` runs with only the required settings.
    env: { CRM_RATE_LIMIT: '10000', RESERVATION_RATE_LIMIT: '10000' },
    describe:
      `budget lifted (10,000 requests per 10 s in the engine, none in the sandbox), pages of ${SLOW.maxPerpage}, ` +
      `every call answered in ${latencyMs}-${latencyMaxMs} ms, the engine's default incremental interval, ` +
      `an attachment of ${PACED_ATTACHMENTS.bytes.min / 1024}-${PACED_ATTACHMENTS.bytes.max / 1024} KB per ${PACED_ATTACHMENTS.perPeople} people`,
    budget: 'lifted',
    attachments: PACED_ATTACHMENTS,
  }
}

/**
 * The slow and paced variants: a first sync of `people` people against `upstream`. Slow: under the real
 * budget (50 requests per 10 s in the engine and in the sandbox), pages of at most 250, `latencyMs`
 * added to every upstream call, and INCREMENTAL_SYNC_INTERVAL=10, so that the routine incremental runs
 * of the other resources go on for the whole sweep, as in production. Paced: see `pacedUpstream`. The engine's process tree (the engine, and the embedded
 * PostgreSQL when it starts one) is sampled every 250 ms: sums of RSS and of PSS; Node's heap from
 * the engine's /metrics every 10 s.
 */
async function treeSweepPeak(ctx: Context, people: number, upstream: TreeUpstream, options: SlowOptions) {
  const { attachments } = upstream
  const sandbox = await startSandbox({
    seedSize: attachments ? { people, attachments: Math.round(people / attachments.perPeople) } : { people },
    seedAttachmentBytes: attachments?.bytes,
    behaviour: upstream.behaviour,
    faults: upstream.faults,
  })
  let database: BenchDatabase | null = null
  let dataDir: string | null = null
  try {
    if (options.database === 'given')
      database = await createBenchDatabase(ctx.server, `memory_${upstream.variant}_${people}`)
    else {
      dataDir = await mkdtemp(join(tmpdir(), 'crm-sync-bench-memory-'))
      await chmod(dataDir, 0o755) // the embedded server may run as the postgres user
    }
    ctx.log(
      `${upstream.variant} first sync of ${people} people (${upstream.describe}, ${options.database} database)`,
    )
    const started = performance.now()
    const engine = await spawnEngine(sandbox, {
      databaseUrl: database?.url ?? '',
      env: {
        ...upstream.env,
        ADMIN_TOKEN,
        ...(dataDir ? { DATA_DIR: dataDir } : {}),
      },
      nodeOptions: [...ctx.nodeOptions, ...options.nodeOptions],
      startFlags: options.startFlags,
    })
    const startRss = engine.peakRss()
    const tree = sampleTree(engine.pid)
    const heap: HeapReading[] = []
    const since = () => Math.round(performance.now() - started)
    let scraping = true
    const scraper = (async () => {
      while (scraping) {
        const reading = await readHeap(engine.url, since())
        if (reading) heap.push(reading)
        for (let waited = 0; scraping && waited < 10_000; waited += 250) await sleep(250)
      }
    })()
    try {
      let lastLog = 0
      const first = await waitFor(
        async () => {
          const run = await readRun(engine.url, 1)
          const sweep = run?.resources.find((entry) => entry.resource === 'crm.people')
          if (sweep && performance.now() - lastLog > 30_000) {
            lastLog = performance.now()
            const peak = tree.peak()
            ctx.log(
              `  ${sweep.records} records, ${sweep.pages} pages after ${round(since() / 1000)} s; ` +
                `tree peak ${round(peak.rss / 2 ** 20)} MB RSS, ${round(peak.pss / 2 ** 20)} MB PSS`,
            )
          }
          return run && (run.status === 'succeeded' || run.status === 'failed') ? run : undefined
        },
        'the first sync',
        3_600_000,
        2_000,
      )
      const seconds = since() / 1000
      const duringSweep = tree.peak()
      const kindsAtPeak = tree.atPeak()
      const engineHwmDuringSweep = engine.peakRss()
      if (options.afterSeconds > 0) {
        ctx.log(`  sweep done in ${round(seconds)} s; ${options.afterSeconds} s more of routine runs`)
        await sleep(options.afterSeconds * 1000)
      }
      tree.stop()
      scraping = false
      await scraper
      const swept = first.resources.find((sweep) => sweep.resource === 'crm.people')
      if (first.status !== 'succeeded')
        throw new Error(`the first sync ended ${first.status}: ${first.error}`)
      const peak = tree.peak()
      const mb = (bytes: number) => round(bytes / 2 ** 20, 1)
      return {
        people,
        records: swept?.records ?? 0,
        pages: swept?.pages ?? 0,
        apiRequests: swept?.api_requests ?? 0,
        seconds: round(seconds, 1),
        database: options.database,
        /**
         * The figure: the engine alone, its VmHWM (exact); with its embedded PostgreSQL, the tree's PSS
         * summed (sampled), which counts the shared buffers once (its RSS summed counts them in every
         * process that touched them: several times what the tree holds).
         */
        peakMb: options.database === 'embedded' ? mb(duringSweep.pss) : mb(engineHwmDuringSweep),
        peakTreeRssMb: mb(duringSweep.rss),
        peakTreePssMb: mb(duringSweep.pss),
        /** The engine alone: VmHWM (exact, not sampled). */
        peakEngineRssMb: mb(engineHwmDuringSweep),
        processes: duringSweep.processes,
        /** The tree by kind of process when its PSS peaked during the sweep. */
        atPeakPss: kindsAtPeak.map((kind) => ({
          kind: kind.kind === 'root' ? 'engine' : kind.kind,
          processes: kind.processes,
          rssMb: mb(kind.rss),
          pssMb: mb(kind.pss),
          pssAnonMb: mb(kind.pssAnon),
          pssShmemMb: mb(kind.pssShmem),
          pssFileMb: mb(kind.pssFile),
        })),
        rssAfterStartMb: mb(startRss),
        afterSeconds: options.afterSeconds,
        peakTreeRssWithAfterMb: mb(peak.rss),
        cpuSeconds: round(engine.cpuSeconds(), 1),
        heapTimeline: heap.map((reading) => ({
          s: round(reading.at / 1000),
          rssMb: mb(reading.rss),
          heapUsedMb: mb(reading.heapUsed),
          heapTotalMb: mb(reading.heapTotal),
          externalMb: mb(reading.external),
          oldUsedMb: mb(reading.oldSpaceUsed),
          largeObjectUsedMb: mb(reading.largeObjectSpaceUsed),
        })),
        treeTimeline: downsample(tree.samples(), 60).map((sample) => ({
          s: round(sample.at / 1000),
          rssMb: mb(sample.rss),
          pssMb: mb(sample.pss),
          engineRssMb: mb(sample.rootRss),
          processes: sample.processes,
        })),
      }
    } finally {
      scraping = false
      tree.stop()
      await scraper
      await engine.stop()
    }
  } finally {
    await database?.drop()
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
    await sandbox.stop()
  }
}

/** At most `count` samples, each the largest (by RSS) of its stretch, so that no peak is lost. */
function downsample(samples: readonly TreeMemory[], count: number): TreeMemory[] {
  if (samples.length <= count) return [...samples]
  const size = Math.ceil(samples.length / count)
  const chosen: TreeMemory[] = []
  for (let i = 0; i < samples.length; i += size) {
    const stretch = samples.slice(i, i + size)
    chosen.push(stretch.reduce((top, sample) => (sample.rss > top.rss ? sample : top)))
  }
  return chosen
}

const OPTIONS = {
  variant:
    'fast (budget lifted, as before), slow (real budget, pages of 250, latency, incremental runs every 10 s), ' +
    'paced (budget lifted, every call answered in 0.4-0.7 s) or both (fast and slow; the default)',
  sizes: 'people of the smaller and the larger sweep (default 20000,200000; 5000,50000 with --quick)',
  latency: 'slow variant: milliseconds added to every upstream call (default 150)',
  pace: 'paced variant: the range every upstream call takes, in ms (default 400-700)',
  database:
    "slow and paced variants: given (the benchmark's PostgreSQL as DATABASE_URL) or embedded (the engine starts its own, counted in its tree) (default given)",
  after:
    'slow and paced variants: seconds the engine keeps running, still sampled, after the sweep (default 0)',
  'node-options':
    "slow and paced variants: extra flags for the engine's Node, space-separated (e.g. --trace-gc)",
  flags:
    "slow and paced variants: start (the flags of `crm-sync start`, bin/node-flags.js) or defaults (Node's) (default start)",
} as const

interface Settings {
  variants: ('fast' | 'slow' | 'paced')[]
  sizes: [number, number]
  slow: SlowOptions
}

function settingsOf(ctx: Context): Settings {
  const { options, quick } = ctx
  const variant = options.variant ?? 'both'
  const variants = ({ fast: ['fast'], slow: ['slow'], paced: ['paced'], both: ['fast', 'slow'] } as const)[
    variant
  ]
  if (!variants) throw new Error(`memory.variant: expected fast, slow, paced or both, got ${variant}`)
  const sizes = (options.sizes ?? (quick ? '5000,50000' : '20000,200000')).split(',').map(Number)
  if (sizes.length !== 2 || !sizes.every((size) => Number.isInteger(size) && size > 0))
    throw new Error(`memory.sizes: expected two positive integers, got ${options.sizes}`)
  const number = (name: string, fallback: number) => {
    const value = Number(options[name] ?? fallback)
    if (!Number.isFinite(value) || value < 0)
      throw new Error(`memory.${name}: not a number ≥ 0: ${options[name]}`)
    return value
  }
  const flags = options.flags ?? 'start'
  if (flags !== 'start' && flags !== 'defaults')
    throw new Error(`memory.flags: expected start or defaults, got ${flags}`)
  const database = options.database ?? 'given'
  if (database !== 'given' && database !== 'embedded')
    throw new Error(`memory.database: expected given or embedded, got ${database}`)
  return {
    variants: [...variants],
    sizes: sizes as [number, number],
    slow: {
      latencyMs: Math.round(number('latency', 150)),
      pace: paceOf(options.pace ?? '400-700'),
      database,
      afterSeconds: number('after', 0),
      nodeOptions: (options['node-options'] ?? '').split(/\s+/).filter(Boolean),
      startFlags: flags === 'start',
    },
  }
}

function paceOf(text: string): [number, number] {
  const range = text.split('-').map(Number)
  const [least, most] = range
  if (
    range.length !== 2 ||
    !Number.isInteger(least) ||
    !Number.isInteger(most) ||
    !(0 <= (least as number)) ||
    (most as number) < (least as number)
  )
    throw new Error(`memory.pace: expected <least>-<most> in ms, got ${text}`)
  return [least as number, most as number]
}

async function fastFigures(ctx: Context, sizes: [number, number]) {
  const results = []
  for (const size of sizes) results.push(await sweepPeak(ctx, size))
  const [small, large] = results as [(typeof results)[number], (typeof results)[number]]
  const defaults = await sweepPeak(ctx, large.people, false)
  const growth = large.peakRssMb / small.peakRssMb - 1
  const figures: Figure[] = results.map((result) => ({
    measure: `peak RSS of the engine, full sweep of ${result.people.toLocaleString('en-US')} people`,
    value: result.peakRssMb,
    unit: 'MB',
    reference: {
      value: result.rssAfterStartMb,
      unit: 'MB',
      label: 'the same process, peak by the end of its start',
    },
    target: atMost(result.peakRssMb, LIMIT_MB, `< ${LIMIT_MB} MB`),
    bound:
      `${result.records} records in ${result.seconds} s (${result.cpuSeconds} s of the engine's CPU); ` +
      `${result.rssAfterStartMb} MB are the process once started (Node, its TypeScript stripping, pg-boss, pino, zod, hono, prom-client), ` +
      `the rest is garbage of the pages V8 has not collected yet, within the bounds of ${NODE_FLAGS.join(' ')} (see the growth)`,
  }))
  figures.push({
    measure: `growth of the peak from ${small.people.toLocaleString('en-US')} to ${large.people.toLocaleString('en-US')} people`,
    value: growth * 100,
    unit: '%',
    digits: 1,
    target: atMost(growth, GROWTH, `not growing (≤ ${GROWTH * 100}%)`),
    bound:
      'not data kept: after every full collection (--trace-gc) the heap is back to about 30 MB, at 5,000 ' +
      'people as at 200,000. Each page (about 5 MB allocated: the answer, 500 records parsed and checked, ' +
      'rows and the JSON parameters) dies with the page but outlives young-generation collections while its ' +
      'statement runs; the peak is how much of that garbage V8 lets pile up: a young generation of at most ' +
      '2 x 16 MB and an old generation collected at about 1.8x its live size (--max-old-space-size=1536) ' +
      "instead of 2 x 64 MB and 4x on Node's defaults",
  })
  figures.push({
    measure: `peak RSS, full sweep of ${large.people.toLocaleString('en-US')} people, engine on Node's defaults (without ${NODE_FLAGS.join(' ')})`,
    value: defaults.peakRssMb,
    unit: 'MB',
    reference: { value: large.peakRssMb, unit: 'MB', label: 'with them, as `crm-sync start` runs' },
    bound:
      `${defaults.records} records in ${defaults.seconds} s (with the flags: ${large.seconds} s); the flags cost CPU: ` +
      `${large.cpuSeconds} s of the engine's CPU against ${defaults.cpuSeconds} s, V8 collecting more often`,
  })
  return {
    settings: {
      sizes,
      engine: `its own process (start(), workers and HTTP) with ${NODE_FLAGS.join(' ')} as \`crm-sync start\` runs it, first sync of every resource from empty`,
      budget: 'lifted (unthrottled sandbox)',
      peak: 'VmHWM from /proc',
    },
    figures,
    details: { results, defaults },
  }
}

async function treeFigures(
  ctx: Context,
  sizes: [number, number],
  upstream: TreeUpstream,
  options: SlowOptions,
) {
  const results = []
  for (const size of sizes) results.push(await treeSweepPeak(ctx, size, upstream, options))
  const name = upstream.variant
  const against =
    upstream.budget === 'real'
      ? 'under the real budget'
      : `answered in ${options.pace.join('-')} ms, budget lifted`
  const [small, large] = results as [(typeof results)[number], (typeof results)[number]]
  const growth = large.peakMb / small.peakMb - 1
  const embedded = options.database === 'embedded'
  const tree = embedded
    ? 'the engine and its embedded PostgreSQL (postmaster, backends, autovacuum and I/O workers): PSS summed, sampled every 250 ms'
    : "the engine alone (its PostgreSQL is the benchmark's, outside its tree): VmHWM"
  const figures: Figure[] = results.map((result) => ({
    measure: `${name} sweep: peak ${embedded ? 'PSS' : 'RSS'} of the engine's process tree${embedded ? ' (with its embedded PostgreSQL)' : ''}, first sync of ${result.people.toLocaleString('en-US')} people ${against}`,
    value: result.peakMb,
    unit: 'MB',
    reference: {
      value: result.rssAfterStartMb,
      unit: 'MB',
      label: 'the engine, peak by the end of its start',
    },
    target: atMost(result.peakMb, LIMIT_MB, `< ${LIMIT_MB} MB`),
    bound:
      `${result.records} records on ${result.pages} pages in ${result.seconds} s (${result.apiRequests} requests of the sweep, ` +
      `${result.cpuSeconds} s of the engine's CPU); ${result.processes} process(es) at most; ` +
      `sums over the tree: RSS ${result.peakTreeRssMb} MB, PSS ${result.peakTreePssMb} MB; the engine's own VmHWM ${result.peakEngineRssMb} MB; ` +
      `at the peak: ${result.atPeakPss
        .slice(0, 4)
        .map((kind) => `${kind.kind} ${kind.pssMb} MB (${kind.pssAnonMb} private, ${kind.pssShmemMb} shared)`)
        .join(', ')}`,
  }))
  figures.push({
    measure: `${name} sweep: growth of the tree's peak from ${small.people.toLocaleString('en-US')} to ${large.people.toLocaleString('en-US')} people`,
    value: growth * 100,
    unit: '%',
    digits: 1,
    target: atMost(growth, GROWTH, `not growing (≤ ${GROWTH * 100}%)`),
    bound:
      `the sweep of ${large.people.toLocaleString('en-US')} lasts ${large.seconds} s against ${small.seconds} s: ` +
      'what grows with the length of the sweep shows here and not in the fast variant (heap timeline in the details)',
  })
  return {
    settings: {
      sizes,
      engine: `its own process with ${options.startFlags ? NODE_FLAGS.join(' ') : "Node's defaults"}${options.nodeOptions.length ? ` ${options.nodeOptions.join(' ')}` : ''}, first sync of every resource from empty`,
      upstream: upstream.describe,
      database: options.database,
      tree,
      peak: tree,
    },
    figures,
    details: { results },
  }
}

async function run(ctx: Context) {
  const settings = settingsOf(ctx)
  const parts = []
  if (settings.variants.includes('fast'))
    parts.push({ name: 'fast', ...(await fastFigures(ctx, settings.sizes)) })
  if (settings.variants.includes('slow'))
    parts.push({
      name: 'slow',
      ...(await treeFigures(ctx, settings.sizes, slowUpstream(settings.slow), settings.slow)),
    })
  if (settings.variants.includes('paced'))
    parts.push({
      name: 'paced',
      ...(await treeFigures(ctx, settings.sizes, pacedUpstream(settings.slow), settings.slow)),
    })
  return {
    settings: Object.fromEntries(parts.map((part) => [part.name, part.settings])),
    figures: parts.flatMap((part) => part.figures),
    details: Object.fromEntries(parts.map((part) => [part.name, part.details])),
  }
}

export const memory: Scenario = { name: 'memory', title: 'Memory', options: OPTIONS, run }
