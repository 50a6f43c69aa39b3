// Our own webhook sender: lean deliveries (`{model, event, record_id}`, as the CRM sends them, to
// the URL crm-sync registers: the secret is a path segment) posted by a few concurrent senders, each
// numbered (`chaos_seq`, an extra key the receiver keeps in the payload) so that the inbox can be
// audited delivery by delivery: every acknowledged one must be there, under the inbox id it was
// answered with, and must end applied (`processed`).
import { sql } from 'kysely'
import type { Sandbox } from '../../sandbox/index.ts'
import { webhookPath } from '../../src/receiver/app.ts'
import type { Db } from '../../src/store/database.ts'
import { waitFor } from '../../test/support/process.ts'
import { CHAOS_SECRET } from './engine.ts'
import { emptyTally, type Tally, tallyStatus } from './tally.ts'

export interface LoadOptions {
  /** Base URLs of the engines to post to, taken in turn. */
  targets: string[]
  /** Person ids to name in the deliveries (read at every post: records come and go). */
  ids: () => number[]
  senders?: number
  /** Pause of each sender between two posts. */
  pauseMs?: number
  /** A sender's patience: the CRM gives up after 30 s. */
  timeoutMs?: number
}

export interface DeliveryLoad {
  /** Everything sent so far, and per phase (see `phase`). */
  tally(): Tally
  phases(): Map<string, Tally>
  /** Later posts count under this phase too (the first phase is `healthy`). */
  phase(name: string): void
  /** Posts answered 2xx per target. */
  perTarget(): Map<string, number>
  /** Sequence number → inbox id of every acknowledged delivery. */
  acknowledged: Map<number, number>
  /** Sequence numbers answered 503. */
  refused: Set<number>
  /** Requests under way right now. */
  inFlight(): number
  /** Resolves with the time of the first acknowledgement after `since` (epoch ms). */
  firstAckAfter(since: number, timeoutMs: number): Promise<number>
  stop(): Promise<void>
}

export function startDeliveryLoad(options: LoadOptions): DeliveryLoad {
  const total = emptyTally()
  const phases = new Map<string, Tally>()
  const perTarget = new Map<string, number>()
  const acknowledged = new Map<number, number>()
  const ackTimes: number[] = []
  const refused = new Set<number>()
  let phase = 'healthy'
  let seq = 0
  let inFlight = 0
  let stopping = false
  const path = webhookPath(CHAOS_SECRET, 'person', 'update')

  const post = async () => {
    const ids = options.ids()
    if (ids.length === 0) return undefined
    const number = ++seq
    const target = options.targets[number % options.targets.length] as string
    const body = JSON.stringify({
      model: 'person',
      event: 'update',
      record_id: ids[number % ids.length],
      chaos_seq: number,
    })
    const tallies = [total, phases.get(phase) ?? phases.set(phase, emptyTally()).get(phase)] as Tally[]
    inFlight++
    let status: number | 'unreachable' | 'timeout'
    try {
      const response = await fetch(`${target}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
      })
      status = response.status
      if (status >= 200 && status < 300) {
        const answer = (await response.json()) as { inbox_id?: number }
        acknowledged.set(number, Number(answer.inbox_id))
        ackTimes.push(Date.now())
        perTarget.set(target, (perTarget.get(target) ?? 0) + 1)
      } else {
        await response.body?.cancel()
        if (status === 503) refused.add(number)
      }
    } catch (error) {
      status = (error as Error).name === 'TimeoutError' ? 'timeout' : 'unreachable'
    } finally {
      inFlight--
    }
    for (const tally of tallies) tallyStatus(tally, status)
    return status
  }

  const senders = Array.from({ length: options.senders ?? 4 }, async () => {
    while (!stopping) {
      const status = await post()
      // Nobody listening (an engine killed or restarting): a sender backs off rather than spin.
      const pause = status === 'unreachable' ? 250 : (options.pauseMs ?? 25)
      await new Promise((resolve) => setTimeout(resolve, pause))
    }
  })

  return {
    tally: () => ({ ...total }),
    phases: () => new Map([...phases].map(([name, tally]) => [name, { ...tally }])),
    phase(name) {
      phase = name
    },
    perTarget: () => new Map(perTarget),
    acknowledged,
    refused,
    inFlight: () => inFlight,
    firstAckAfter(since, timeoutMs) {
      return waitFor(async () => ackTimes.find((at) => at >= since), timeoutMs, 'an acknowledged delivery')
    },
    async stop() {
      stopping = true
      await Promise.all(senders)
    },
  }
}

export interface InboxAudit {
  /** Acknowledged, but not in the inbox under the id answered, or rejected/failed there. */
  lost: number[]
  /** Acknowledged and in the inbox, but still waiting to be applied. */
  unapplied: number[]
  /** Answered 503 (not acknowledged), yet found stored: the sender's retry makes a duplicate. */
  refusedButStored: number[]
}

/** What the numbered deliveries were answered: acknowledged (with their inbox id) or refused. */
export type Answers = Pick<DeliveryLoad, 'acknowledged' | 'refused'>

/** Compares the inbox with what the deliveries were answered. */
export async function auditInbox(db: Db, load: Answers): Promise<InboxAudit> {
  const { rows } = await sql<{ id: number; status: string; seq: string }>`
    select id, status, payload->>'chaos_seq' as seq from sync.inbox where payload ? 'chaos_seq'
  `.execute(db)
  const bySeq = new Map(rows.map((row) => [Number(row.seq), row]))
  const audit: InboxAudit = { lost: [], unapplied: [], refusedButStored: [] }
  for (const [seq, inboxId] of load.acknowledged) {
    const row = bySeq.get(seq)
    if (!row || Number(row.id) !== inboxId || row.status === 'rejected' || row.status === 'failed')
      audit.lost.push(seq)
    else if (row.status === 'accepted') audit.unapplied.push(seq)
  }
  for (const seq of load.refused) if (bySeq.has(seq)) audit.refusedButStored.push(seq)
  return audit
}

/** The audit as a line of the report (each count must be 0). */
export function describeAudit(audit: InboxAudit, sandboxShortfall = 0): string {
  return (
    `acknowledged deliveries: ${audit.lost.length} missing from the inbox (or rejected, failed), ` +
    `${audit.unapplied.length} never applied, ${sandboxShortfall} of the sandbox's unaccounted for`
  )
}

/** Waits until no acknowledged delivery waits to be applied (or `timeoutMs` passed); the last audit. */
export async function settledAudit(db: Db, load: Answers, timeoutMs: number): Promise<InboxAudit> {
  let audit = await auditInbox(db, load)
  const deadline = Date.now() + timeoutMs
  while (audit.unapplied.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500))
    audit = await auditInbox(db, load)
  }
  return audit
}

/**
 * The sandbox's own deliveries (its users' changes) carry no numbering, so they are audited by count:
 * as many inbox rows without our numbering as deliveries the sandbox saw acknowledged, at least.
 */
export async function sandboxShortfall(
  db: Db,
  sandbox: Sandbox,
): Promise<{ acknowledged: number; stored: number; shortfall: number }> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from sync.inbox
    where status <> 'rejected' and not coalesce(payload ? 'chaos_seq', false)
  `.execute(db)
  const stored = rows[0]?.n ?? 0
  const acknowledged = sandbox.control.counters().deliveries.succeeded
  return { acknowledged, stored, shortfall: Math.max(0, acknowledged - stored) }
}
