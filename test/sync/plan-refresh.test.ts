// What a refresh does next (src/sync/plan/refresh.ts), from one read of the state. One row a decision.
import { describe, expect, it } from 'vitest'
import { nextRefreshStep, type QuietOptions, type RefreshFacts } from '../../src/sync/plan/refresh.ts'

// REFRESH_QUIET_MS 500; 2 s under pressure; 30 s at most.
const quiet: QuietOptions = {
  quietMs: 500,
  maxWaitMs: 30_000,
  pressure: { windowMs: 10_000, deliveries: 50, quietMs: 2_000 },
}

const base: RefreshFacts = {
  answered: false,
  cascadeInFullSweep: false,
  crowded: false,
  deliveryAgeMs: null,
  pressure: false,
  steps: 0,
  joined: 0,
  waitedMs: 0,
}

describe('nextRefreshStep', () => {
  it.each<{ why: string; facts: Partial<RefreshFacts>; quiet?: QuietOptions | null; step: unknown }>([
    { why: 'nothing known of the record: fetch it', facts: {}, step: { do: 'fetch' } },
    {
      why: 'a fetch since its delivery wrote it: skip, whatever else holds',
      facts: { answered: true, crowded: true, cascadeInFullSweep: true, deliveryAgeMs: 10 },
      step: { do: 'skip' },
    },
    {
      why: 'a cascade check while a full sweep of its resource runs: put off',
      facts: { cascadeInFullSweep: true, crowded: true },
      step: { do: 'defer' },
    },
    {
      why: 'refreshes of its resource crowd: join the catch-up walk',
      facts: { crowded: true, deliveryAgeMs: 10 },
      step: { do: 'join' },
    },
    {
      why: 'one round joined: a second, the walk in flight may have asked before the delivery came',
      facts: { steps: 1, joined: 1, crowded: false },
      step: { do: 'join' },
    },
    {
      why: 'two rounds joined and not answered: fetch, without waiting for quiet',
      facts: { steps: 2, joined: 2, deliveryAgeMs: 10 },
      step: { do: 'fetch' },
    },
    {
      why: 'crowding found after the first step does not start a walk',
      facts: { steps: 1, waitedMs: 300, crowded: true, deliveryAgeMs: 600 },
      step: { do: 'fetch' },
    },
    {
      why: 'a delivery 100 ms ago: wait until 500 ms have passed without one',
      facts: { deliveryAgeMs: 100 },
      step: { do: 'wait', ms: 400 },
    },
    { why: 'quiet for 500 ms: fetch', facts: { deliveryAgeMs: 500 }, step: { do: 'fetch' } },
    {
      why: 'under pressure, quiet for 600 ms is not enough: 2 s',
      facts: { deliveryAgeMs: 600, pressure: true },
      step: { do: 'wait', ms: 1_400 },
    },
    {
      why: 'under pressure, quiet for 2 s: fetch',
      facts: { deliveryAgeMs: 2_000, pressure: true },
      step: { do: 'fetch' },
    },
    {
      why: 'never quiet: the wait ends 30 s after the first step',
      facts: { steps: 40, deliveryAgeMs: 100, waitedMs: 29_900 },
      step: { do: 'wait', ms: 100 },
    },
    {
      why: '30 s waited: fetch, quiet or not',
      facts: { steps: 41, deliveryAgeMs: 100, waitedMs: 30_000 },
      step: { do: 'fetch' },
    },
    {
      why: 'no quiet configured (REFRESH_QUIET_MS 0): fetch at once',
      facts: { deliveryAgeMs: 10 },
      quiet: { ...quiet, quietMs: 0 },
      step: { do: 'fetch' },
    },
    {
      why: 'a handler without a quiet wait: fetch at once',
      facts: { deliveryAgeMs: 10 },
      quiet: null,
      step: { do: 'fetch' },
    },
  ])('$why', ({ facts, quiet: options, step }) => {
    expect(nextRefreshStep({ ...base, ...facts }, options === null ? undefined : (options ?? quiet))).toEqual(
      step,
    )
  })
})
