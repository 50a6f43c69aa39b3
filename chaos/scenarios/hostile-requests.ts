// A few thousand hostile requests against the HTTP surface, with slow clients holding connections
// open meanwhile and genuine deliveries mixed in. Every answer must be the 4xx the contract gives (or
// 503 under load), never 500 nor 2xx; rejected deliveries are kept in the inbox; the genuine ones are
// stored; the process stays healthy.
import { sql } from 'kysely'
import { createRandom } from '../../sandbox/random.ts'
import { freePort } from '../../src/database/free-port.ts'
import { webhookPath } from '../../src/receiver/app.ts'
import { createScratchDatabase } from '../support/database.ts'
import { describeAudit, settledAudit } from '../support/deliveries.ts'
import { CHAOS_SECRET, engineEnv, errorLines, startEngine, tail } from '../support/engine.ts'
import { type Answer, KINDS, type RequestKind, send, slowClient } from '../support/hostile.ts'
import { type Outcome, type Scenario, type ScenarioContext, secondsSince } from '../support/scenario.ts'
import { emptyTally, tallyStatus } from '../support/tally.ts'
import { startWorld } from '../support/world.ts'

const GENUINE: RequestKind = {
  name: 'genuine delivery',
  weight: 10,
  expect: [200],
  build: () => ({ method: 'POST', path: webhookPath(CHAOS_SECRET, 'person', 'update') }),
}

export const hostileRequests: Scenario = {
  name: 'hostile-requests',
  title: 'Thousands of hostile requests against the HTTP surface',
  description:
    '3,000 requests, 16 at a time, drawn from 27 hostile kinds (wrong, missing and undecodable ' +
    'secrets; malformed JSON, binary garbage, bodies nested 1,100 deep, contradicting or unknown ' +
    'shapes; unknown models and events; GET/PUT/DELETE on webhooks; 1.5 MiB bodies announced and ' +
    'chunked; 32 KiB of headers; admin routes without or with a wrong token, with malformed bodies and ' +
    'run ids), with 10% genuine deliveries mixed in, while 60 slow clients hold connections with ' +
    'unfinished headers or bodies (or hang up mid-body). Asserts: no 500 and no 2xx to a hostile ' +
    'request; every answer is the one the contract gives (or 503); every rejected delivery (400) is ' +
    'in `sync.inbox` as `rejected`; every genuine delivery acknowledged is stored; the engine closes ' +
    'every slow connection by itself within 45 s; `/healthz` and `/readyz` answer 200 afterwards.',
  limitSeconds: { full: 180, quick: 120 },
  async run({ server, quick, scope, log, check, note }: ScenarioContext): Promise<Outcome> {
    const total = quick ? 600 : 3_000
    const sandbox = await startWorld(scope, { seedSize: 20 })
    const database = await createScratchDatabase(server, 'hostile-requests', scope)
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const engine = await startEngine('engine', engineEnv(sandbox, { databaseUrl: database.url, port }), scope)
    await engine.ready()
    const people = sandbox.control.crm.liveIds('people')

    const slowKinds = ['unfinished headers', 'unfinished body', 'hung up mid-body'] as const
    const slow = Array.from({ length: quick ? 15 : 60 }, (_, i) =>
      slowClient(port, slowKinds[i % 3] ?? 'unfinished body'),
    )
    for (const client of slow) scope.defer(() => client.destroy())

    const random = createRandom(3)
    const kinds = [...KINDS, GENUINE]
    const weights = kinds.reduce((sum, kind) => sum + kind.weight, 0)
    const pick = () => {
      let roll = random.int(1, weights)
      for (const kind of kinds) {
        roll -= kind.weight
        if (roll <= 0) return kind
      }
      return GENUINE
    }
    const tally = emptyTally()
    const unexpected = new Map<string, number>()
    /** Token → kind of every delivery answered 400 that the inbox must keep. */
    const rejected = new Map<string, string>()
    const answers = { acknowledged: new Map<number, number>(), refused: new Set<number>() }
    const latencies: number[] = []
    let hostileAcknowledged = 0
    let next = 0
    const started = Date.now()
    const worker = async () => {
      while (next < total) {
        const n = next++
        const kind = pick()
        const token = `chaos-rej-${n}.`
        const request =
          kind === GENUINE
            ? {
                ...kind.build(token),
                body: JSON.stringify({
                  model: 'person',
                  event: 'update',
                  record_id: people[n % people.length],
                  chaos_seq: n,
                }),
              }
            : kind.build(token)
        const sentAt = Date.now()
        const { status, body } = await send(url, request)
        if (kind === GENUINE) latencies.push(Date.now() - sentAt)
        tallyStatus(tally, status)
        if (kind === GENUINE && status === 200) answers.acknowledged.set(n, Number(JSON.parse(body).inbox_id))
        if (status === 503) answers.refused.add(n)
        if (kind.kept && status === 400) rejected.set(token, kind.name)
        const allowed = (s: Answer) => s === 503 || kind.expect.includes(s as number)
        if (!allowed(status)) {
          const key = `${kind.name} → ${status}`
          unexpected.set(key, (unexpected.get(key) ?? 0) + 1)
        }
        if (kind !== GENUINE && typeof status === 'number' && status < 300) hostileAcknowledged++
      }
    }
    await Promise.all(Array.from({ length: 16 }, worker))
    const flood = secondsSince(started)
    log(`${total} requests in ${flood} s; waiting for the slow clients to be cut off`)

    const closedAfter = await Promise.all(
      slow.map((client) =>
        Promise.race([client.closed, new Promise<number>((r) => setTimeout(() => r(-1), 50_000))]),
      ),
    )
    const stillOpen = closedAfter.filter((seconds) => seconds < 0).length
    check(stillOpen === 0, `${stillOpen} slow connections still open after 50 s`)
    const cutLate = slow.filter(
      (client, i) => client.kind !== 'hung up mid-body' && (closedAfter[i] ?? 0) > 45,
    ).length
    check(cutLate === 0, `${cutLate} slow connections were closed only after 45 s`)
    for (const client of slow) {
      const status = client.status()
      if (status !== null) tallyStatus(tally, status)
    }

    const health = await send(url, { method: 'GET', path: '/healthz' })
    const ready = await send(url, { method: 'GET', path: '/readyz' })
    check(health.status === 200, `/healthz answered ${health.status} after the flood`)
    check(ready.status === 200, `/readyz answered ${ready.status} after the flood`)
    check(
      engine.exitCode() === undefined,
      `the engine exited (${engine.exitCode()}):\n${tail(engine.output())}`,
    )

    const { rows } = await sql<{ content: string }>`
      select coalesce(payload::text, body) as content from sync.inbox where status = 'rejected'`.execute(
      database.db,
    )
    const keptTokens = new Set(rows.flatMap((row) => row.content.match(/chaos-rej-\d+\./g) ?? []))
    const missing = [...rejected].filter(([token]) => !keptTokens.has(token))
    const examples = missing.slice(0, 5).map(([token, kind]) => `${token} (${kind})`)
    check(
      missing.length === 0,
      `${missing.length} of ${rejected.size} rejected deliveries not kept in the inbox: ${examples.join(', ')}`,
    )
    const audit = await settledAudit(database.db, answers, 60_000)
    check(hostileAcknowledged === 0, `${hostileAcknowledged} hostile requests were answered 2xx`)
    for (const [what, count] of unexpected) check(false, `unexpected answer: ${what} (${count}×)`)

    latencies.sort((a, b) => a - b)
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
    note(
      `${total} requests in ${flood} s; genuine deliveries: ${answers.acknowledged.size} acknowledged, answered in ${at(0.5)} ms (median), ${at(0.99)} ms (p99)`,
    )
    note(
      `rejected deliveries answered 400: ${rejected.size}, kept in the inbox: ${rejected.size - missing.length}`,
    )
    const slowAnswers = new Map<number, number>()
    for (const status of slow.map((client) => client.status()))
      if (status !== null) slowAnswers.set(status, (slowAnswers.get(status) ?? 0) + 1)
    const answered = [...slowAnswers].map(([status, count]) => `${status} ×${count}`).join(', ') || 'none'
    const longest = Math.max(...closedAfter).toFixed(1)
    note(
      `slow clients: ${slow.length}, closed by the engine after ${longest} s at most; answered ${answered}`,
    )
    note(`engine log: ${errorLines(engine.output()).length} error lines`)
    note(describeAudit(audit))
    return {
      tally,
      lost: audit.lost.length + audit.unapplied.length,
      recoverSeconds: null,
      convergeSeconds: null,
    }
  },
}
