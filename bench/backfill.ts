// 3. Backfill under the real budget (50 requests per 10 s, the sandbox enforcing it too): records per
// second of a full sweep of 50,000 people, against the ceiling page size x budget; no 429 allowed.
// The sweep costs 102 requests (count, 100 pages, the empty page that ends the walk): the first 50 of a
// fresh budget go at once, the rest at the budget's pace, so the whole sweep spans two windows and a bit.
// Option `latency` (ms added to every upstream call, default 0): the budget's use under a real upstream's
// latency, the sweep's requests a second against the budget's 5, which one request in flight at a time
// cannot reach at 300 ms.

import { startSandbox } from '../sandbox/index.ts'
import { parseConfig } from '../src/config/index.ts'
import { people } from '../src/resources/index.ts'
import { createBenchDatabase } from './support/database.ts'
import { engineEnv } from './support/engines.ts'
import { atLeast, atMost, type Context, type Scenario } from './support/scenario.ts'
import { round } from './support/stats.ts'
import { sweepHere } from './support/sweeps.ts'

const BUDGET = { requests: 50, windowSeconds: 10 }
const PAGE_SIZE = 500

async function run(ctx: Context) {
  const count = ctx.quick ? 10_000 : 50_000
  const latencyMs = Number(ctx.options.latency ?? 0)
  if (!Number.isInteger(latencyMs) || latencyMs < 0)
    throw new Error(`backfill.latency: expected milliseconds, got ${ctx.options.latency}`)
  const sandbox = await startSandbox({
    seedSize: { people: count },
    behaviour: { crmRateLimit: BUDGET, maxPerpage: PAGE_SIZE },
    faults: { crm: { latencyMs } },
  })
  const database = await createBenchDatabase(ctx.server, 'backfill')
  try {
    const config = parseConfig(
      engineEnv(sandbox, 3000, {
        databaseUrl: database.url,
        env: {
          CRM_RATE_LIMIT: String(BUDGET.requests),
        },
      }),
    )
    ctx.log(`full sweep of ${count} people under ${BUDGET.requests} requests / ${BUDGET.windowSeconds} s`)
    const swept = await sweepHere(database.db, config, { mode: 'full', resources: [people.name] })
    const counters = sandbox.control.counters().crm
    const sweep = swept.run.resources[0]
    const records = sweep?.records ?? 0
    const rate = records / swept.seconds
    const ceiling = (PAGE_SIZE * BUDGET.requests) / BUDGET.windowSeconds
    const throttled = counters.statuses['429'] ?? 0
    const walkSeconds = swept.seconds - swept.throttledSeconds
    const walkRate = records / walkSeconds
    // The budget's use: the sweep's requests a second against the budget's rate. A fresh budget lets a
    // window's requests go at once, but a walk applies its pages one after the other and cannot take
    // that burst faster than it writes them.
    const rateShare = counters.requests / swept.seconds / (BUDGET.requests / BUDGET.windowSeconds)
    return {
      settings: {
        people: count,
        pageSize: PAGE_SIZE,
        budget: `${BUDGET.requests} requests / ${BUDGET.windowSeconds} s (engine and sandbox)`,
        sweep: 'full, crm.people only, the engine sweep handler in this process, fresh budget',
        latency: latencyMs ? `${latencyMs} ms added to every upstream call` : 'none added (loopback)',
      },
      figures: [
        {
          measure: `records per second, full sweep of ${count.toLocaleString('en-US')} people`,
          value: rate,
          unit: '/s',
          reference: { value: ceiling, unit: '/s', label: 'ceiling: page size x budget' },
          target: atLeast(
            rate / ceiling,
            0.95,
            `≥ 95% of ceiling (is ${Math.round((rate / ceiling) * 100)}%)`,
          ),
          bound:
            `the budget: ${counters.requests} requests (count, ${sweep?.pages} pages, the empty page that ends the walk) in ` +
            `${round(swept.seconds, 1)} s, ${round(swept.throttledSeconds, 1)} s of it waiting for a slot; the walk itself ` +
            `(fetch and apply, one page after the other) goes at ${Math.round(walkRate)}/s when it does not wait`,
        },
        {
          measure: 'records per second of the walk while not waiting for the budget',
          value: walkRate,
          unit: '/s',
          reference: { value: ceiling, unit: '/s', label: 'ceiling' },
        },
        {
          measure: `budget use: requests a second of the budget's rate${latencyMs ? `, ${latencyMs} ms a request` : ''}`,
          value: rateShare * 100,
          unit: '%',
          digits: 0,
          target: atLeast(rateShare, 0.9, '≥ 90%'),
          bound: `${counters.requests} requests in ${round(swept.seconds, 1)} s against ${BUDGET.requests} / ${BUDGET.windowSeconds} s`,
        },
        {
          measure: '429 answers from the upstream',
          value: throttled,
          unit: '',
          target: atMost(throttled, 0, '0'),
        },
      ],
      details: {
        seconds: round(swept.seconds, 2),
        throttledSeconds: round(swept.throttledSeconds, 2),
        requests: counters.requests,
        statuses: counters.statuses,
        routes: counters.routes,
        sweep,
      },
    }
  } finally {
    await database.drop()
    await sandbox.stop()
  }
}

export const backfill: Scenario = {
  name: 'backfill',
  title: 'Backfill under the real budget',
  run,
  options: { latency: 'milliseconds added to every upstream call (default 0: loopback)' },
}
