// How fresh a mirrored table is against what the schedule promises, in three states, as the status
// page shows it (docs/operations.md, "Status page"). A pure decision over one resource's status:
//
// | the table | state |
// |---|---|
// | its last sweep failed | error |
// | never swept to the end, a sweep queued or running | late (the first sync is under way) |
// | never swept to the end, nothing under way | error |
// | last successful sweep more than two intervals (and the slack) ago | error |
// | last successful sweep more than one interval (and the slack) ago | late |
// | otherwise | on time |
//
// The interval is INCREMENTAL_SYNC_INTERVAL: an incremental run every interval sweeps every table (a
// table whose changes a feed or its webhooks bring still ends a sweep, reading nothing). The slack is
// what a run itself takes, a sweep ending some time after the interval that started it: one interval,
// 60 s at most.
import type { ResourceStatus } from './engine-status.ts'

export type HealthState = 'on time' | 'late' | 'error'

export interface TableHealth {
  state: HealthState
  /** Why, in a few words, for the page. */
  reason: string
  /** The start of the last successful sweep (incremental or full); null when there was none. */
  sweptAt: Date | null
}

/** What a run itself may take before its table counts as late, at most. */
const MOST_SLACK_SECONDS = 60

const WORST_FIRST: readonly HealthState[] = ['error', 'late', 'on time']

export function tableHealth(resource: ResourceStatus, now: Date, intervalSeconds: number): TableHealth {
  const times = [resource.last_incremental_sync_at, resource.last_full_sync_at]
    .filter((time) => time !== null)
    .map((time) => new Date(time))
  const sweptAt = times.length ? new Date(Math.max(...times.map((time) => time.getTime()))) : null
  const last = resource.last_run
  if (last?.status === 'failed')
    return { state: 'error', reason: `its last run failed: ${last.error ?? ''}`, sweptAt }
  if (sweptAt === null) {
    return resource.active_sweep
      ? { state: 'late', reason: 'the first sync is under way', sweptAt }
      : { state: 'error', reason: 'never synced, and no sweep is under way', sweptAt }
  }
  const ageSeconds = (now.getTime() - sweptAt.getTime()) / 1000
  const slack = Math.min(intervalSeconds, MOST_SLACK_SECONDS)
  const interval = `INCREMENTAL_SYNC_INTERVAL ${intervalSeconds} s`
  if (ageSeconds > 2 * intervalSeconds + slack)
    return { state: 'error', reason: `no successful sweep for over two intervals (${interval})`, sweptAt }
  if (ageSeconds > intervalSeconds + slack)
    return { state: 'late', reason: `no successful sweep for over one interval (${interval})`, sweptAt }
  return { state: 'on time', reason: 'swept within the interval', sweptAt }
}

/** The worse of two states first; equal states keep their order. */
export function worseFirst(a: HealthState, b: HealthState): number {
  return WORST_FIRST.indexOf(a) - WORST_FIRST.indexOf(b)
}

export interface AccountHealth {
  /** The worst state of its tables ('on time' without tables). */
  state: HealthState
  /** How many tables are in error, and late. */
  errors: number
  late: number
}

/** An account's state: its worst table's, with how many are in error and late (accounts side by side). */
export function accountHealth(
  resources: readonly ResourceStatus[],
  now: Date,
  intervalSeconds: number,
): AccountHealth {
  const states = resources.map((resource) => tableHealth(resource, now, intervalSeconds).state)
  const [state = 'on time'] = [...states].sort(worseFirst)
  const number = (wanted: HealthState) => states.filter((each) => each === wanted).length
  return { state, errors: number('error'), late: number('late') }
}

/** The worse of two accounts first: its state, then more tables in error, then more late. */
export function worseAccountFirst(a: AccountHealth, b: AccountHealth): number {
  return worseFirst(a.state, b.state) || b.errors - a.errors || b.late - a.late
}
