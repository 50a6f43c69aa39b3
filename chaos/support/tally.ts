// How the engine answered: counts by kind of answer, the figures every scenario reports.

export interface Tally {
  sent: number
  /** 2xx. */
  acknowledged: number
  client4xx: number
  http500: number
  http503: number
  /** 5xx other than 500 and 503 (502, 504...). */
  other5xx: number
  /** No answer: connection refused or reset (an engine down or killed). */
  unreachable: number
  /** No answer within the sender's patience. */
  timeout: number
}

export function emptyTally(): Tally {
  return {
    sent: 0,
    acknowledged: 0,
    client4xx: 0,
    http500: 0,
    http503: 0,
    other5xx: 0,
    unreachable: 0,
    timeout: 0,
  }
}

export function tallyStatus(tally: Tally, status: number | 'unreachable' | 'timeout'): void {
  tally.sent++
  if (status === 'unreachable') tally.unreachable++
  else if (status === 'timeout') tally.timeout++
  else if (status >= 200 && status < 300) tally.acknowledged++
  else if (status === 500) tally.http500++
  else if (status === 503) tally.http503++
  else if (status >= 500) tally.other5xx++
  else tally.client4xx++
}

/** `sent 120: 2xx 80, 503 40` — the non-zero counts of a tally. */
export function describeTally(tally: Tally): string {
  const parts = [
    ['2xx', tally.acknowledged],
    ['4xx', tally.client4xx],
    ['500', tally.http500],
    ['503', tally.http503],
    ['other 5xx', tally.other5xx],
    ['no answer', tally.unreachable],
    ['timed out', tally.timeout],
  ] as const
  const shown = parts.filter(([, count]) => count > 0).map(([name, count]) => `${name} ${count}`)
  return `sent ${tally.sent}${shown.length ? `: ${shown.join(', ')}` : ''}`
}
