// How the commands show numbers, instants and durations to a person (JSON output keeps raw values).

export function count(value: number | null | undefined): string {
  return value === null || value === undefined ? '-' : value.toLocaleString('en-US')
}

/** `512 B`, `48 KiB`, `12.4 MiB`, `3.1 GiB`: a size on disk. */
export function bytes(value: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let size = value
  let unit = 0
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024
    unit += 1
  }
  return `${unit === 0 || size >= 100 ? Math.round(size) : size.toFixed(1)} ${units[unit]}`
}

function toDate(value: Date | string | null | undefined): Date | null {
  if (value === null || value === undefined) return null
  const date = value instanceof Date ? value : new Date(value)
  return Number.isNaN(date.getTime()) ? null : date
}

/** `2025-11-22 17:03:12Z`: an instant that is data (a watermark), shown in UTC to the second. */
export function instant(value: Date | string | null | undefined): string {
  const date = toDate(value)
  return date ? `${date.toISOString().slice(0, 19).replace('T', ' ')}Z` : '-'
}

/** `42 s`, `3 min`, `2 h 5 min`, `3 d`. */
export function duration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000))
  if (seconds < 120) return `${seconds} s`
  const minutes = Math.round(seconds / 60)
  if (minutes < 120) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`
  return `${Math.round(hours / 24)} d`
}

/** `3 min ago`, or `never`: an event, shown by how long ago it happened. */
export function ago(value: Date | string | null | undefined, now = Date.now()): string {
  const date = toDate(value)
  return date ? `${duration(now - date.getTime())} ago` : 'never'
}

const UPSTREAM_NAMES: Record<string, string> = { crm: 'the CRM', reservation: 'the reservation service' }

/** `the CRM`, `the reservation service`: an upstream as a sentence names it. */
export function upstreamName(service: string): string {
  return UPSTREAM_NAMES[service] ?? service
}
