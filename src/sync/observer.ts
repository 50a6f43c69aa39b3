// What the workers report as they go, for /metrics. Every callback is optional and synchronous: an
// observer counts, it never decides anything nor makes a job wait.
import type { RunView } from '../store/runs.ts'

/** How a record reached the mirror: a webhook body, an answer of the upstream, or a deletion. */
export type AppliedSource = 'payload' | 'fetch' | 'tombstone'

export interface SyncObserver {
  /** Jobs of a queue handled (`completed`) or thrown back to pg-boss for a retry (`failed`). */
  jobsDone?(kind: string, outcome: 'completed' | 'failed', count: number): void
  /** Records written; `receivedAt` is when the delivery that led to them arrived, if one did. */
  recordsApplied?(resource: string, source: AppliedSource, count: number, receivedAt?: Date): void
  /** A refresh was not sent: a fetch sent after the record's latest delivery had answered it. */
  refreshSkipped?(resource: string): void
  /** The details pass read records' details (`gone` of them answered 404), spending `requests`. */
  detailsRead?(resource: string, outcome: { read: number; gone: number; requests: number }): void
  /** A run ended (succeeded or failed), reported by the process whose sweep ended it. */
  runFinished?(run: RunView): void
  /** Expired rows deleted by retention, by table (`sync.inbox`, `sync.runs`, ...) and status. */
  rowsPruned?(table: string, status: string, count: number): void
}
