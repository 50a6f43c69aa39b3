// The system clock's sleeps: a sleep cut off by its signal leaves no timer behind, which would keep a
// stopped process alive until it fired.
import { describe, expect, it } from 'vitest'
import { sleepUntil, systemClock } from '../../src/api-client/clock.ts'
import { settledWithin } from '../support/process.ts'

const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length

describe('the system clock', () => {
  it('ends a sleep once its signal is aborted, leaving no timer behind', async () => {
    const before = timers()
    const stop = new AbortController()
    const sleeping = sleepUntil(systemClock, Date.now() + 60_000, stop.signal)
    expect(timers()).toBe(before + 1)
    stop.abort()
    expect(await settledWithin(sleeping, 5_000)).toEqual({ status: 'fulfilled', value: undefined })
    expect(timers()).toBe(before)
  })
})
