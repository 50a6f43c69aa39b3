// Log lines for a person at a terminal: one line per entry (`warn: crm.people (run 3): sweep failed: ...`),
// the error's message in it but not its stack, and no dump of the objects a line carries; stack traces
// and every field only at debug level. Elsewhere (a pipe, a file, a container) the lines stay pino's JSON.
//
// The lines pass through a LogOutput, which `resync --wait` diverts while it draws its progress bars, so
// that a line written meanwhile goes above the bars instead of through them (run-progress.ts).

/** Where a logger writes (a pino destination); `divert` hands the finished lines elsewhere for a while. */
export interface LogOutput {
  write(line: string): boolean
  /** Until the returned function is called, each finished line goes to `write` instead of the stream. */
  divert(write: (text: string) => void): () => void
}

export interface TerminalFormat {
  /** Stack traces and every field, for LOG_LEVEL=debug or trace. */
  debug: boolean
  /** The time of day before each line (`start`, which runs for long); one-shot commands leave it out. */
  time: boolean
}

const LEVELS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
}
// Fields that say nothing to a person (job ids, the service's own name) or that the line shows otherwise.
const HIDDEN = new Set([
  'level',
  'time',
  'msg',
  'err',
  'service',
  'pid',
  'hostname',
  'resource',
  'runId',
  'recordId',
])
const JOB_FIELDS = new Set(['jobId', 'queue'])
const LONGEST_VALUE = 80

const pad = (value: number, width = 2) => String(value).padStart(width, '0')

function timeOfDay(epochMs: unknown): string {
  const date = new Date(typeof epochMs === 'number' ? epochMs : Date.now())
  const ms = pad(date.getMilliseconds(), 3)
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${ms}`
}

/** `crm.people #4711 (run 3)`: what the line is about, from the fields of its job. */
function subject(entry: Record<string, unknown>): string {
  const parts: string[] = []
  if (entry.resource !== undefined) parts.push(String(entry.resource))
  if (entry.recordId !== undefined) parts.push(`#${entry.recordId}`)
  if (entry.runId !== undefined) parts.push(parts.length ? `(run ${entry.runId})` : `run ${entry.runId}`)
  return parts.join(' ')
}

/** The error's message where the line's message does not say it already (pino adds the causes' to it). */
function errorText(message: string, err: unknown): string {
  if (typeof err !== 'object' || err === null) return ''
  const text = (err as { message?: unknown }).message
  if (typeof text !== 'string' || text === '') return ''
  const parts = text.split(': ')
  let said = parts.length
  while (said > 0 && !message.includes(parts.slice(0, said).join(': '))) said -= 1
  const rest = parts.slice(said).join(': ')
  return rest ? `${message ? ': ' : ''}${rest}` : ''
}

function fieldValue(value: unknown, debug: boolean): string {
  if (value === null || typeof value !== 'object') return String(value)
  const json = JSON.stringify(value)
  if (debug || json.length <= LONGEST_VALUE) return json
  return Array.isArray(value) ? `[${value.length} items]` : '{…}'
}

function fields(entry: Record<string, unknown>, debug: boolean): string {
  const shown = Object.entries(entry)
    .filter(([key, value]) => !HIDDEN.has(key) && value !== undefined && (debug || !JOB_FIELDS.has(key)))
    .map(([key, value]) => {
      const text = fieldValue(value, debug).replace(/\s*\n\s*/g, ' ')
      return `${key}=${!debug && text.length > LONGEST_VALUE ? `${text.slice(0, LONGEST_VALUE - 1)}…` : text}`
    })
  return shown.length ? ` (${shown.join(', ')})` : ''
}

function stack(err: unknown): string {
  const text = (err as { stack?: unknown } | null)?.stack
  return typeof text === 'string' ? `\n${text.replace(/^/gm, '    ')}` : ''
}

/** One finished pino line (JSON), as a person reads it: one line, and the stack below it at debug. */
export function formatLogLine(line: string, format: TerminalFormat): string {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(line) as Record<string, unknown>
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`
  }
  if (typeof entry !== 'object' || entry === null) return `${line.trimEnd()}\n`
  const level = LEVELS[Number(entry.level)] ?? String(entry.level)
  const message = typeof entry.msg === 'string' ? entry.msg : ''
  const about = subject(entry)
  const text = `${about}${about && message ? ': ' : ''}${message}${errorText(message, entry.err)}`
  const head = `${format.time ? `${timeOfDay(entry.time)} ` : ''}${level}: ${text.replace(/\s*\n\s*/g, ' ')}`
  return `${head}${fields(entry, format.debug)}${format.debug ? stack(entry.err) : ''}\n`
}

/** A logger's output on `stream`: formatted for a person when `format` is given, else pino's JSON. */
export function createLogOutput(
  stream: { write(text: string): unknown },
  format: TerminalFormat | null,
): LogOutput {
  let diverted: ((text: string) => void) | null = null
  return {
    write(line) {
      const text = format ? formatLogLine(line, format) : line
      if (diverted) diverted(text)
      else stream.write(text)
      return true
    },
    divert(write) {
      diverted = write
      return () => {
        if (diverted === write) diverted = null
      }
    },
  }
}
