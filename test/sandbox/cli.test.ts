// `crm-sync sandbox`: starts both services, prints how to point crm-sync at them, stops on signal.
import { describe, expect, it } from 'vitest'
import { RENAMED_SEED } from '../../sandbox/command.ts'
import { runSandboxCommand } from '../../sandbox/index.ts'

describe('runSandboxCommand', () => {
  it('serves both APIs with the seeded records and prints the URLs and keys', async () => {
    const stop = new AbortController()
    let print: (text: string) => void = () => {}
    const printed = new Promise<string>((resolve) => {
      print = resolve
    })
    const running = runSandboxCommand(['--records', '12', '--crm-port', '0', '--reservation-port', '0'], {
      log: (text) => print(text),
      signal: stop.signal,
    })
    const output = await printed
    const crmUrl = /CRM_BASE_URL=(\S+)/.exec(output)?.[1]
    const crmKey = /CRM_API_KEY=(\S+)/.exec(output)?.[1]
    const reservationUrl = /RESERVATION_BASE_URL=(\S+)/.exec(output)?.[1]
    const reservationKey = /RESERVATION_API_KEY=(\S+)/.exec(output)?.[1]
    expect(crmUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const count = await fetch(`${crmUrl}/api/people/count?apikey=${crmKey}`)
    expect(await count.json()).toEqual({ total_entries: 12 })
    const contacts = await fetch(`${reservationUrl}/api/contacts`, {
      headers: { authorization: `Token token="${reservationKey}"` },
    })
    expect(await contacts.json()).toHaveLength(12)
    stop.abort()
    expect(await running).toBe(0)
  })

  it('prints usage for --help, and exits 2 on invalid options', async () => {
    const lines: string[] = []
    expect(await runSandboxCommand(['--help'], { log: (line) => lines.push(line) })).toBe(0)
    expect(lines.join('\n')).toContain('--records <count>')
    expect(await runSandboxCommand(['--records', 'many'], { log: (line) => lines.push(line) })).toBe(2)
    expect(await runSandboxCommand(['--bogus'], { log: (line) => lines.push(line) })).toBe(2)
  })

  it('takes --seed, the former name of --records, and says what it is now', async () => {
    const stop = new AbortController()
    const lines: string[] = []
    let served: (text: string) => void = () => {}
    const printed = new Promise<string>((resolve) => {
      served = resolve
    })
    const running = runSandboxCommand(['--seed', '7', '--crm-port', '0', '--reservation-port', '0'], {
      log: (line) => {
        lines.push(line)
        if (line.startsWith('Sandbox running')) served(line)
      },
      signal: stop.signal,
    })
    expect(await printed).toContain('7 records of each resource')
    expect(lines[0]).toBe(RENAMED_SEED)
    expect(RENAMED_SEED).toMatch(/--seed is now --records .* --random-seed picks which data/)
    stop.abort()
    expect(await running).toBe(0)
  })
})
