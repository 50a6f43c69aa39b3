// Log lines for a person at a terminal: one line each, with the error's message and without its stack
// or the objects it drags along (a pg client), stack traces only at debug level; JSON elsewhere. And
// the loggers of the commands: which stream, which form, which level.
import { describe, expect, it } from 'vitest'
import { commandLogger, quieter } from '../../src/cli/command-logger.ts'
import { formatLogLine } from '../../src/cli/terminal-log.ts'
import { parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'

const API_KEY = 'crm-key-0123456789'

/** A stream that records what is written; a terminal when `tty`. */
function stream(tty: boolean) {
  const written: string[] = []
  return { isTTY: tty, write: (text: string) => written.push(text), text: () => written.join('') }
}

/** An error as pg throws it: a cause, a stack, and the client (a socket, the backend's key) along. */
function pgError(): Error {
  const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5999'), { code: 'ECONNREFUSED' })
  const client = { connectionParameters: { host: '127.0.0.1', port: 5999 }, processID: 4711, secretKey: 99 }
  return Object.assign(new Error('cannot connect to the database at 127.0.0.1:5999/x', { cause }), { client })
}

function logged(level: string, log: (logger: ReturnType<typeof createLogger>) => void): string {
  const lines: string[] = []
  const logger = createLogger({ level, destination: { write: (line: string) => lines.push(line) } })
  log(logger)
  return lines.join('')
}

describe('formatLogLine', () => {
  it('makes one line of an entry: level, what it is about, message, error message and plain fields', () => {
    const line = logged('info', (logger) =>
      logger.warn(
        {
          err: pgError(),
          resource: 'crm.people',
          runId: 3,
          jobId: 'f3a5',
          queue: 'resource-sweep',
          pages: 2,
        },
        'sweep failed',
      ),
    )
    const text = formatLogLine(line, { debug: false, time: false })
    expect(text).toBe(
      'warn: crm.people (run 3): sweep failed: cannot connect to the database at 127.0.0.1:5999/x: ' +
        'connect ECONNREFUSED 127.0.0.1:5999 (pages=2)\n',
    )
  })

  it('does not repeat the error message the line already says, nor dump objects, nor show the stack', () => {
    const line = logged('info', (logger) =>
      logger.error(
        { err: pgError(), connection: { a: 'x'.repeat(200), b: [1, 2, 3] }, applied: [] },
        'start failed: cannot connect to the database at 127.0.0.1:5999/x',
      ),
    )
    const text = formatLogLine(line, { debug: false, time: false })
    expect(text.split('\n')).toHaveLength(2) // one line, and its end
    expect(text).toBe(
      'error: start failed: cannot connect to the database at 127.0.0.1:5999/x: connect ECONNREFUSED ' +
        '127.0.0.1:5999 (connection={…}, applied=[])\n',
    )
    expect(text).not.toMatch(/\bat \S+ \(/) // no frame of a stack
    expect(text).not.toContain('processID')
  })

  it('shows the stack, causes included, and every field at debug level', () => {
    const line = logged('debug', (logger) =>
      logger.debug({ err: pgError(), jobId: 'f3a5' }, 'migrate failed'),
    )
    const [head, ...stack] = formatLogLine(line, { debug: true, time: true }).trimEnd().split('\n')
    expect(head).toMatch(/^\d\d:\d\d:\d\d\.\d{3} debug: migrate failed: cannot connect .* \(jobId=f3a5\)$/)
    expect(stack[0]).toBe('    Error: cannot connect to the database at 127.0.0.1:5999/x')
    expect(stack.some((frame) => /^ {8}at /.test(frame))).toBe(true)
    expect(stack).toContain('    caused by: Error: connect ECONNREFUSED 127.0.0.1:5999')
  })

  it('passes a line that is not JSON as it is', () => {
    expect(formatLogLine('plain text', { debug: false, time: false })).toBe('plain text\n')
  })
})

describe('the logger of a command', () => {
  const config = (env: Record<string, string> = {}) =>
    parseConfig({ CRM_BASE_URL: 'https://crm.example.com', CRM_API_KEY: API_KEY, ...env })

  it('writes one line per entry to a terminal, warnings and worse, secrets masked', () => {
    const stdout = stream(true)
    const stderr = stream(true)
    const { logger } = commandLogger({}, config(), false, { stdout, stderr })
    logger.info('not shown without --verbose')
    logger.warn({ err: new Error(`refused ${API_KEY}`) }, 'upstream request failed; retrying')
    logger.flush()
    expect(stderr.text()).toBe('warn: upstream request failed; retrying: refused ***\n')
    expect(stdout.text()).toBe('')
  })

  it('writes JSON to a pipe, the stack included', () => {
    const stderr = stream(false)
    const { logger } = commandLogger({}, config(), false, { stdout: stream(false), stderr })
    logger.warn({ err: new Error('boom') }, 'job queue error')
    const entry = JSON.parse(stderr.text()) as { msg: string; err: { stack: string } }
    expect(entry.msg).toBe('job queue error')
    expect(entry.err.stack).toContain('Error: boom')
  })

  it('shows stack traces at a terminal with --verbose and LOG_LEVEL=debug only', () => {
    for (const [level, verbose, stacked] of [
      ['info', true, false],
      ['debug', false, false],
      ['debug', true, true],
    ] as const) {
      const stderr = stream(true)
      const { logger } = commandLogger({}, config({ LOG_LEVEL: level }), verbose, {
        stdout: stream(true),
        stderr,
      })
      logger.error({ err: new Error('boom') }, 'failed')
      expect(stderr.text().includes('    Error: boom'), `${level} ${verbose}`).toBe(stacked)
      expect(stderr.text()).toMatch(/^error: failed: boom\n/)
    }
  })

  it('gives start its lines on stdout, at LOG_LEVEL, with the time of day', () => {
    const stdout = stream(true)
    const { logger } = commandLogger({ service: true }, config(), false, { stdout, stderr: stream(true) })
    logger.info({ port: 3000 }, 'listening')
    expect(stdout.text()).toMatch(/^\d\d:\d\d:\d\d\.\d{3} info: listening \(port=3000\)\n$/)
  })

  it('quietens the work a command reports itself, unless --verbose', () => {
    const stderr = stream(false)
    const { logger } = commandLogger({}, config(), false, { stdout: stream(false), stderr })
    quieter(logger, false, 'silent').error('not shown')
    quieter(logger, false, 'error').warn('not shown either')
    quieter(logger, false, 'error').error('shown')
    quieter(logger, true, 'silent').warn('shown with --verbose')
    const messages = stderr
      .text()
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { msg: string }).msg)
    expect(messages).toEqual(['shown', 'shown with --verbose'])
    // never below the command's own level
    const fatal = commandLogger({}, config({ LOG_LEVEL: 'fatal' }), false, { stdout: stderr, stderr }).logger
    expect(quieter(fatal, false, 'error').level).toBe('fatal')
  })
})
