// Opt-in: the details pass (people's historic events and assistants, read per person) as users meet it:
// the engine as `npm start` runs it with DETAILS_BUDGET_PERCENT 20 (twice the default), against the sandbox
// at the demo's size (300 records of every resource) under the real budget (50 requests / 10 s in the
// engine and the sandbox) and an upstream answering in 100-600 ms, nothing else changing.
// 1. The first complete mirror (the run at start), with the pass and with DETAILS_BUDGET_PERCENT=0: the
//    pass must not delay it (it waits for the first sync).
// 2. From the end of the first sync until every person's details are read: the pass's requests a second
//    and the most it sent in any 10 s window, against its share (20% of 50 / 10 s: 1 a second, 10 a
//    window), and the time against the bound that share sets (requests / 1 a second).
// 3. The mirror's historic events and assistants against the sandbox's at the end.
// Option `people` (default 300; --quick 60).
import { type Sandbox, startSandbox } from '../sandbox/index.ts'
import { compareMirror, describe as describeTables } from '../sandbox/mirror-truth.ts'
import { people } from '../src/resources/index.ts'
import { readDetailsProgress } from '../src/store/record-details.ts'
import { createBenchDatabase } from './support/database.ts'
import { spawnEngine } from './support/engines.ts'
import { runsSettled } from './support/mirror.ts'
import { atMost, type Context, type Scenario } from './support/scenario.ts'
import { round, sleep, waitFor } from './support/stats.ts'

const BUDGET = { requests: 50, windowSeconds: 10 }
const LATENCY = { latencyMs: 100, latencyMaxMs: 600 }
const SHARE = 0.2
const NESTED = ['GET /api/people/:id/historic_events', 'GET /api/people/:id/assis']
const OTHERS = {
  companies: 300,
  deals: 300,
  projects: 300,
  tasks: 300,
  protocols: 300,
  contacts: 300,
  bookings: 300,
}

function startUpstream(peopleCount: number) {
  return startSandbox({
    seedSize: { ...OTHERS, people: peopleCount },
    behaviour: { crmRateLimit: BUDGET, reservationRateLimit: BUDGET },
    faults: { crm: LATENCY, reservation: LATENCY },
  })
}

const nestedRequests = (sandbox: Sandbox) => {
  const { routes } = sandbox.control.counters().crm
  return NESTED.reduce((sum, route) => sum + (routes[route] ?? 0), 0)
}

/** Seconds the engine takes to end its first run (the first complete mirror), with the pass at `percent`. */
async function firstMirror(ctx: Context, peopleCount: number, percent: number, keep: boolean) {
  const sandbox = await startUpstream(peopleCount)
  const database = await createBenchDatabase(ctx.server, `details_${percent}`)
  const started = Date.now()
  const engine = await spawnEngine(sandbox, {
    nodeOptions: ctx.nodeOptions,
    databaseUrl: database.url,
    env: { DETAILS_BUDGET_PERCENT: String(percent), CRM_RATE_LIMIT: String(BUDGET.requests) },
  })
  const close = async () => {
    await engine.stop()
    await database.drop()
    await sandbox.stop()
  }
  try {
    await waitFor(
      async () => ((await runsSettled(database.db)) ? true : undefined),
      'the first sync',
      900_000,
    )
    const seconds = (Date.now() - started) / 1000
    const duringFirstSync = nestedRequests(sandbox)
    if (!keep) await close()
    return { seconds, duringFirstSync, sandbox, database, close }
  } catch (error) {
    await close()
    throw error
  }
}

async function run(ctx: Context) {
  const peopleCount = Number(ctx.options.people ?? (ctx.quick ? 60 : 300))
  if (!Number.isInteger(peopleCount) || peopleCount < 1)
    throw new Error(`details.people: expected a whole number, got ${ctx.options.people}`)
  ctx.log(`first complete mirror without the pass (${peopleCount} people, 300 of the rest)`)
  const without = await firstMirror(ctx, peopleCount, 0, false)
  ctx.log(`first complete mirror with the pass at ${SHARE * 100}%, then the pass to the end`)
  const withPass = await firstMirror(ctx, peopleCount, SHARE * 100, true)
  const { sandbox, database } = withPass
  try {
    const startedAt = Date.now()
    const before = nestedRequests(sandbox)
    // Requests sent by the pass, sampled every second: the most in any window.
    const samples: number[] = [before]
    const progress = async () => readDetailsProgress(database.db, people)
    while (true) {
      await sleep(1000)
      samples.push(nestedRequests(sandbox))
      const now = await progress()
      if (now.current === now.records && now.records > 0) break
      if (Date.now() - startedAt > 3 * 3600_000) throw new Error('the pass did not end within 3 h')
    }
    const seconds = (Date.now() - startedAt) / 1000
    const requests = nestedRequests(sandbox) - before
    const perWindow = Math.max(
      ...samples.map((count, i) => count - (samples[Math.max(0, i - BUDGET.windowSeconds)] ?? 0)),
    )
    const share = (SHARE * BUDGET.requests) / BUDGET.windowSeconds
    const tables = await compareMirror(database.db, sandbox, {
      include: (resource) => resource === people,
      details: true,
      limit: 5,
    })
    const differences = describeTables(tables, 5)
    const rate = requests / seconds
    return {
      settings: {
        people: peopleCount,
        others: '300 of every other resource',
        budget: `${BUDGET.requests} requests / ${BUDGET.windowSeconds} s in the engine and the sandbox`,
        latency: `${LATENCY.latencyMs}-${LATENCY.latencyMaxMs} ms every upstream call`,
        engine: `npm start's process, defaults but CRM_RATE_LIMIT; DETAILS_BUDGET_PERCENT ${SHARE * 100} and 0`,
        nestedPageSize: 'the sandbox default: 10 items a page',
      },
      figures: [
        {
          measure: 'first complete mirror with the pass',
          value: withPass.seconds,
          unit: 's',
          digits: 1,
          reference: {
            value: without.seconds,
            unit: 's',
            label: 'without it (DETAILS_BUDGET_PERCENT=0)',
            digits: 1,
          },
          target: atMost(withPass.seconds, without.seconds * 1.1, '≤ 110% of the run without it'),
        },
        {
          measure: 'lists read during the first sync',
          value: withPass.duringFirstSync,
          unit: '',
          target: atMost(withPass.duringFirstSync, 0, '0'),
        },
        {
          measure: "the pass's requests a second, first sync to every person read",
          value: rate,
          unit: '/s',
          digits: 2,
          reference: { value: share, unit: '/s', label: `${SHARE * 100}% of the budget`, digits: 2 },
          target: atMost(rate, share, `≤ ${share}/s`),
        },
        {
          measure: 'the most the pass sent in any 10 s window (sampled every second)',
          value: perWindow,
          unit: '',
          reference: { value: SHARE * BUDGET.requests, unit: '', label: 'its share of a window' },
          target: atMost(perWindow, SHARE * BUDGET.requests, `≤ ${SHARE * BUDGET.requests}`),
        },
        {
          measure: `every person's details read (${peopleCount} people, ${requests} requests)`,
          value: seconds / 60,
          unit: 'min',
          digits: 1,
          reference: {
            value: requests / share / 60,
            unit: 'min',
            label: 'bound: its requests at its share',
            digits: 1,
          },
          bound: `the share: ${requests} requests at ${share}/s at most; ${round(requests / peopleCount, 2)} requests a person`,
        },
        {
          measure: 'historic events and assistants differing from the sandbox at the end',
          value: differences.length,
          unit: '',
          target: atMost(differences.length, 0, '0'),
        },
      ],
      details: {
        differences,
        requests,
        seconds: round(seconds, 1),
        perWindow,
        withoutSeconds: without.seconds,
      },
    }
  } finally {
    await withPass.close()
  }
}

export const details: Scenario = {
  name: 'details',
  title: "The details pass: people's historic events and assistants",
  optIn: true,
  run,
  options: { people: 'people in the account (default 300; --quick 60)' },
}
