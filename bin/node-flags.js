// The V8 flags every crm-sync process runs with. bin/crm-sync.js applies them (re-executing Node with
// them when they are missing); `npm start`, `npm run cli` and the Dockerfile start through it, and the
// benchmark's engines get them too, so that it measures what users run (the apply scenario's sweeps,
// which run in the benchmark's own process, excepted: its settings say which flags they ran on).
//
// Why: a sweep allocates about 5 MB per page of 500 records (the answer, its parsed records, rows
// and the statement's JSON), which dies with the page but outlives young-generation collections
// while the page's statement runs. With Node's defaults V8 then grows the young generation to
// 2 x 64 MB and lets the old generation reach 4x its live size before collecting it: a full sweep
// peaked at 300-370 MB although the live heap stays about 30 MB (see docs/performance.md).
// - --max-semi-space-size=16: the young generation takes at most 2 x 16 MB.
// - --max-old-space-size=1536: V8 lets the old generation grow past its live size by a factor that
//   scales with this limit (1.3x at 256 MB, 1.6x at 1 GB, 1.8x at 1.5 GB, 4x at 2 GB and above).
//   1.5 GB is about 50 times the live heap: a limit to collect sooner, far from one to run out of.
//   (1 GB peaked 10 MB lower, but its more frequent full collections cost 11% more of the engine's
//   CPU in a sweep of 200,000 people: bench/memory.ts.)
// A flag set in NODE_OPTIONS or on Node's command line wins over these.
export const NODE_FLAGS = ['--max-semi-space-size=16', '--max-old-space-size=1536']

/** `--max_old_space_size=1` → `max-old-space-size`. */
const flagName = (flag) => flag.replace(/^--?/, '').split('=')[0].replaceAll('_', '-')

/**
 * The flags of NODE_FLAGS that neither Node's command line (`execArgv`) nor `NODE_OPTIONS` sets,
 * whatever value they give it.
 * @param {readonly string[]} execArgv
 * @param {string | undefined} nodeOptions
 * @returns {string[]}
 */
export function missingNodeFlags(execArgv, nodeOptions) {
  const given = new Set([...execArgv, ...(nodeOptions ?? '').split(/\s+/)].filter(Boolean).map(flagName))
  return NODE_FLAGS.filter((flag) => !given.has(flagName(flag)))
}
