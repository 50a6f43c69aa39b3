// Reading the Prometheus text format in tests: series by name and labels.

export interface Series {
  name: string
  labels: Record<string, string>
  value: number
}

export function parseSeries(text: string): Series[] {
  const series: Series[] = []
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match) continue
    const labels: Record<string, string> = {}
    for (const label of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1] as string] = label[2] as string
    }
    series.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return series
}

/** The sum of the series of `name` whose labels include `labels`; undefined when there is none. */
export function sampleOf(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const matching = parseSeries(text).filter(
    (series) =>
      series.name === name && Object.entries(labels).every(([key, value]) => series.labels[key] === value),
  )
  return matching.length ? matching.reduce((sum, series) => sum + series.value, 0) : undefined
}

/** The names declared with `# TYPE`, and their types. */
export function metricTypes(text: string): Record<string, string> {
  return Object.fromEntries(
    [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1] as string, match[2] as string]),
  )
}
