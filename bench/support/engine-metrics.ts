// An engine's /metrics (Prometheus text) read from outside, and the upstream requests the sandbox
// counted, split by what they were for: what the benchmarks compare before and after a phase.
import { execFileSync } from 'node:child_process'
import type { Sandbox } from '../../sandbox/index.ts'
import { resources } from '../../src/resources/index.ts'

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Every sample of the engine's /metrics; empty when it cannot be read. */
export async function scrapeMetrics(engineUrl: string): Promise<Sample[]> {
  let text: string
  try {
    text = await (await fetch(`${engineUrl}/metrics`)).text()
  } catch {
    return []
  }
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match) continue
    const labels: Record<string, string> = {}
    for (const label of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\(.)/g, '$1')
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return samples
}

/** The sum of the samples of `name` whose labels include `match`. */
export function sumOf(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  return samples
    .filter(
      (sample) =>
        sample.name === name && Object.entries(match).every(([key, value]) => sample.labels[key] === value),
    )
    .reduce((sum, sample) => sum + sample.value, 0)
}

/** Requests by route as the sandbox counted them (`GET /api/people/:id` → n), both services. */
export function routeCounts(sandbox: Pick<Sandbox, 'control'>): Record<string, number> {
  const counters = sandbox.control.counters()
  return {
    ...Object.fromEntries(Object.entries(counters.crm.routes).map(([route, n]) => [`crm ${route}`, n])),
    ...Object.fromEntries(
      Object.entries(counters.reservation.routes).map(([route, n]) => [`reservation ${route}`, n]),
    ),
  }
}

/** `after - before`, route by route, without the routes that did not move. */
export function routeDelta(
  after: Record<string, number>,
  before: Record<string, number>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([route, n]) => [route, n - (before[route] ?? 0)] as const)
      .filter(([, n]) => n !== 0)
      .sort(([a], [b]) => a.localeCompare(b)),
  )
}

export type RouteKind = 'index' | 'count' | 'show' | 'other'

/** What a sandbox route (`crm GET /api/people/:id`) is for, and of which mirror table. */
export function routeKind(route: string): { resource: string; kind: RouteKind } {
  const match = /^(crm|reservation) (\w+) \/api\/([\w]+)(\/.*)?$/.exec(route)
  if (!match) return { resource: 'other', kind: 'other' }
  const [, service, method, collection, rest] = match
  const schema = service === 'crm' ? 'crm' : 'reservations'
  // The mirror table whose index the route is (notes are `protocols`, custom field types
  // `custom_fields_types`); a route of no resource keeps its own name.
  const resource =
    resources.find((entry) => entry.name.startsWith(`${schema}.`) && entry.path === collection)?.name ??
    `${schema}.${collection}`
  if (method !== 'GET') return { resource, kind: 'other' }
  if (!rest) return { resource, kind: 'index' }
  if (rest === '/count') return { resource, kind: 'count' }
  if (rest === '/:id') return { resource, kind: 'show' }
  return { resource, kind: 'other' }
}

/**
 * The engine the benchmarks ran: the commit checked out and the files under src/ that differ from it
 * (the engine processes run the working tree as it was when they started).
 */
export function engineVersion(): { commit: string; uncommittedSrcFiles: number } {
  const git = (args: string[]) => {
    try {
      return execFileSync('git', args, { cwd: new URL('../..', import.meta.url), encoding: 'utf8' }).trim()
    } catch {
      return ''
    }
  }
  const changed = git(['status', '--porcelain', '--', 'src'])
  return {
    commit: git(['rev-parse', '--short', 'HEAD']) || 'unknown',
    uncommittedSrcFiles: changed ? changed.split('\n').length : 0,
  }
}
