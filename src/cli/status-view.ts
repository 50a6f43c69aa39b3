// `crm-sync status` for a person: tables of resources, hooks and queues, with the problems spelled out.
import type { ResourceStatus, Status } from '../status/engine-status.ts'
import { ago, bytes, count, instant } from './format.ts'
import { type HookRow, hooksTable } from './hooks.ts'
import { formatTable } from './table.ts'

/** The CRM's hooks as `crm-sync status` listed them, or why it could not. */
export type HookListing = { hooks: HookRow[]; error: null } | { hooks: null; error: string }

function lastRun(resource: ResourceStatus, now: number): string {
  const run = resource.last_run
  return run ? `#${run.id} ${run.mode} ${run.status} ${ago(run.finished_at, now)}` : 'none'
}

function resourcesTable(status: Status, now: number): string {
  return formatTable(
    [
      { header: 'resource' },
      { header: 'live rows', align: 'right' },
      { header: 'remote', align: 'right' },
      { header: 'drift', align: 'right' },
      { header: 'watermark' },
      { header: 'last incremental' },
      { header: 'last full' },
      { header: 'last run' },
    ],
    status.resources.map((resource) => [
      resource.resource,
      count(resource.live_rows),
      count(resource.remote_count),
      count(resource.drift),
      instant(resource.watermark),
      ago(resource.last_incremental_sync_at, now),
      ago(resource.last_full_sync_at, now),
      lastRun(resource, now),
    ]),
  )
}

function sweepsUnderWay(status: Status): string[] {
  return status.resources.flatMap(({ resource, active_sweep: sweep }) => {
    if (!sweep) return []
    const of = sweep.remote_count === null ? '' : ` of ${count(sweep.remote_count)}`
    // Queued once started: handed back by a process that stopped (Ctrl-C), its job waits for a worker.
    const status =
      sweep.status === 'queued' && sweep.started_at !== null
        ? 'queued (handed back: waits for a worker to resume it)'
        : sweep.status
    return [
      `  ${resource}: run ${sweep.run_id} ${status}, ${count(sweep.records)}${of} records, ${count(sweep.pages)} pages`,
    ]
  })
}

function failures(status: Status): string[] {
  return status.resources.flatMap(({ resource, last_run: run }) =>
    run?.status === 'failed' ? [`  ${resource}: run ${run.id}: ${run.error ?? 'failed'}`] : [],
  )
}

/** The details pass (a person's historic events and assistants, read per person), one line a resource. */
function detailsLines(status: Status, now: number): string[] {
  return status.details.map((details) => {
    const { due } = details
    const pass = details.budget_percent > 0 ? `at most ${details.budget_percent}% of the budget` : 'off'
    return (
      `  ${details.resource} (${details.tables.join(', ')}): ${count(details.current)} of ${count(details.records)} read and current; ` +
      `due: ${count(due.new)} never read, ${count(due.changed)} changed since, ${count(due.stale)} read before the last full run` +
      `${details.failing ? ` (${count(details.failing)} failing, tried again later)` : ''}; ` +
      `last read ${ago(details.last_read_at, now)}; pass ${pass}`
    )
  })
}

function hooksSection(hooks: HookListing | null): string {
  if (!hooks) return 'Hooks: not asked (--no-hooks)'
  if (hooks.error !== null) return `Hooks: could not be listed: ${hooks.error}`
  if (hooks.hooks.length === 0)
    return 'Hooks: none (crm-sync hooks register, or PUBLIC_URL with crm-sync start)'
  const failing = hooks.hooks.filter((hook) => Number(hook.failed) > 0).length
  const title = `Hooks (${hooks.hooks.length}, ${failing ? `${failing} with failed deliveries` : 'no failures'})`
  return `${title}\n${hooksTable(hooks.hooks)}`
}

function queuesTable(status: Status): string {
  return formatTable(
    [
      { header: 'queue' },
      { header: 'queued', align: 'right' },
      { header: 'active', align: 'right' },
      { header: 'failed', align: 'right' },
    ],
    Object.entries(status.queues).map(([name, counts]) => [
      name,
      count(counts.queued),
      count(counts.active),
      count(counts.failed),
    ]),
  )
}

export function renderStatus(status: Status, hooks: HookListing | null): string {
  const now = new Date(status.generated_at).getTime()
  const { inbox } = status
  const sections = [
    `Resources (as of ${instant(status.generated_at)})\n${resourcesTable(status, now)}`,
    sweepsUnderWay(status).length ? `Sweeps under way\n${sweepsUnderWay(status).join('\n')}` : '',
    failures(status).length ? `Last run failed\n${failures(status).join('\n')}` : '',
    detailsLines(status, now).length
      ? `Details (read per record)\n${detailsLines(status, now).join('\n')}`
      : '',
    hooksSection(hooks),
    `Queues (as last counted by pg-boss)\n${queuesTable(status)}`,
    `Inbox: ${count(inbox.accepted)} deliveries waiting to be applied, ${count(inbox.processed)} applied, ${count(inbox.rejected)} rejected, ${count(inbox.failed)} failed after every retry; ${bytes(status.inbox_bytes)} on disk`,
  ]
  return sections.filter(Boolean).join('\n\n')
}
