// The demo's closing report: how long convergence took, rows per table, what the webhooks and the
// API calls cost, and the example queries with their results.

import type { Counters } from '../sandbox/index.ts'
import { count, duration } from '../src/cli/format.ts'
import { formatTable } from '../src/cli/table.ts'
import type { Db } from '../src/store/database.ts'
import { countInboxByStatus } from '../src/store/status-queries.ts'
import { countRows, EXAMPLE_QUERIES, runQuery } from './queries.ts'

export interface DemoFacts {
  /** From the engine's start until the mirror first matched the sandbox. */
  initialSyncMs: number
  initialRequests: number
  changes: number
  /** From the last change until the mirror matched again. */
  convergenceMs: number
  counters: Counters
  /** A psql-ready URL of the mirror when it stays up (--follow). */
  databaseUrl: string | null
}

function apiLine(name: string, service: Counters['crm']): string {
  const problems = [
    service.injectedErrors && `${count(service.injectedErrors)} answered 500 on purpose`,
    service.injectedThrottles && `${count(service.injectedThrottles)} answered 429 on purpose`,
    service.rateLimited && `${count(service.rateLimited)} over the rate limit`,
  ].filter(Boolean)
  return `  ${name}: ${count(service.requests)} requests${problems.length ? ` (${problems.join(', ')})` : ''}`
}

export async function renderSummary(db: Db, facts: DemoFacts): Promise<string> {
  const { counters } = facts
  const tables = await countRows(db)
  const inbox = await countInboxByStatus(db)
  const delivered = counters.deliveries
  const lines = [
    'Summary',
    `  first sync: ${duration(facts.initialSyncMs)} and ${count(facts.initialRequests)} API requests (registering 12 webhooks included)`,
    `  ${count(facts.changes)} changes under faults: the mirror matched the sandbox again ${duration(facts.convergenceMs)} after the last one`,
    '',
    'Rows per table (deleted: tombstoned rows, kept with _deleted_at set)',
    formatTable(
      [{ header: 'table' }, { header: 'live', align: 'right' }, { header: 'deleted', align: 'right' }],
      tables.map((table) => [table.table, count(table.live), count(table.deleted)]),
    ),
    '',
    'Webhook deliveries',
    `  sent by the CRM: ${count(delivered.queued)}; ${count(delivered.dropped)} dropped, ${count(delivered.duplicated)} duplicated, ${count(delivered.delayed)} delayed (out of order)`,
    `  received: ${count(inbox.processed + inbox.accepted)} applied or queued (${count(inbox.accepted)} waiting), ${count(inbox.rejected)} rejected`,
    '',
    'API requests spent (CRM budget: 50 per 10 s)',
    apiLine('CRM', counters.crm),
    apiLine('reservation service', counters.reservation),
    '',
    facts.databaseUrl
      ? `Example queries (try your own: psql "${facts.databaseUrl}")`
      : 'Example queries (npm run demo -- --follow keeps the mirror up to try your own with psql)',
  ]
  for (const [index, query] of EXAMPLE_QUERIES.entries()) {
    const result = await runQuery(db, query.sql)
    const columns = result.columns.map((header, column) => ({
      header,
      align: result.rows.every((row) => /^-?[\d.]*$/.test(row[column] ?? ''))
        ? ('right' as const)
        : undefined,
    }))
    lines.push('', `-- ${index + 1}. ${query.title}`, `${query.sql};`, '', formatTable(columns, result.rows))
  }
  return lines.join('\n')
}
