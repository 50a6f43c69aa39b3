// The alert rules and the dashboard that ship in ops/: every rule is complete and every expression,
// of a rule or of a panel, names only metrics that crm-sync exports.
import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { createUpstreamMetrics } from '../../src/api-client/index.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import { createMetrics } from '../../src/metrics/index.ts'
import { createReceiverCounters } from '../../src/receiver/counters.ts'
import type { JobQueue } from '../../src/sync/job-queue.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()

/** The names of the series crm-sync exports, histograms with their _bucket, _count and _sum. */
async function exportedSeries(): Promise<Set<string>> {
  const metrics = createMetrics({
    db: database.db,
    boss: { getQueueStats: async () => [] } as unknown as JobQueue,
    config: parseConfig({ CRM_BASE_URL: 'http://127.0.0.1:9', CRM_API_KEY: 'unused-key' }),
    logger: createLogger({ level: 'silent' }),
    receiverCounters: createReceiverCounters(),
    upstream: createUpstreamMetrics(),
    processMetrics: false,
  })
  const text = await metrics.scrape()
  const names = new Set<string>()
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name as string)
    if (type === 'histogram')
      for (const suffix of ['_bucket', '_count', '_sum']) names.add(`${name}${suffix}`)
  }
  return names
}

const namedMetrics = (expr: string) => [...expr.matchAll(/\bcrm_sync_\w+/g)].map((match) => match[0])

interface Rule {
  alert: string
  expr: string
  for?: string
  labels: { severity: string }
  annotations: { summary: string; description: string }
}

describe('ops/alerts.yml', () => {
  it('holds complete rules whose expressions name only exported metrics', async () => {
    const rules = parse(await readFile(new URL('../../ops/alerts.yml', import.meta.url), 'utf8')) as {
      groups: { name: string; rules: Rule[] }[]
    }
    const exported = await exportedSeries()
    const all = rules.groups.flatMap((group) => group.rules)
    expect(all.length).toBeGreaterThanOrEqual(8)
    for (const rule of all) {
      expect(rule.alert).toMatch(/^CrmSync[A-Z]\w+$/)
      expect(['critical', 'warning']).toContain(rule.labels.severity)
      expect(rule.annotations.summary.length).toBeGreaterThan(10)
      expect(rule.for === undefined || /^\d+[smh]$/.test(rule.for)).toBe(true)
      const named = namedMetrics(rule.expr)
      expect(named.length, rule.alert).toBeGreaterThan(0)
      for (const name of named) expect(exported, `${rule.alert}: ${name}`).toContain(name)
    }
    expect(new Set(all.map((rule) => rule.alert)).size).toBe(all.length)
  })
})

describe('ops/grafana-dashboard.json', () => {
  it('queries only exported metrics, one panel each', async () => {
    const dashboard = JSON.parse(
      await readFile(new URL('../../ops/grafana-dashboard.json', import.meta.url), 'utf8'),
    ) as { uid: string; panels: { title: string; targets: { expr: string }[] }[] }
    const exported = await exportedSeries()
    expect(dashboard.uid).toBe('crm-sync')
    for (const panel of dashboard.panels) {
      const named = panel.targets.flatMap((target) => namedMetrics(target.expr))
      expect(named.length, panel.title).toBeGreaterThan(0)
      for (const name of named) expect(exported, `${panel.title}: ${name}`).toContain(name)
    }
  })
})
