// Reads the Dockerfile into stages of instructions, so that a test can check them and carry out the
// steps they describe. Enough of the syntax for this project's Dockerfile: comments, line
// continuations, `FROM image AS name`, and flags such as `--from=...` and `--mount=...`.
import { readFile } from 'node:fs/promises'

export interface Instruction {
  keyword: string
  /** Leading `--name=value` flags. */
  flags: Record<string, string>
  /** The rest of the line, continuations joined. */
  args: string
}

export interface Stage {
  image: string
  name: string | null
  instructions: Instruction[]
}

export async function readDockerfile(path: string): Promise<Stage[]> {
  const lines = (await readFile(path, 'utf8')).split('\n').filter((line) => !/^\s*#/.test(line))
  const logical = lines
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
  const stages: Stage[] = []
  for (const line of logical) {
    const [keyword = '', ...rest] = line.split(/\s+/)
    const flags: Record<string, string> = {}
    while (rest[0]?.startsWith('--')) {
      const [name = '', value = ''] = (rest.shift() as string).slice(2).split(/=(.*)/)
      flags[name] = value
    }
    const instruction = { keyword: keyword.toUpperCase(), flags, args: rest.join(' ') }
    if (instruction.keyword === 'FROM') {
      const [image = '', , name = null] = instruction.args.split(/\s+/)
      stages.push({ image, name, instructions: [] })
    } else {
      stages.at(-1)?.instructions.push(instruction)
    }
  }
  return stages
}

export function find(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword)
}

/** `ENV A=1 B=2` as an object (the `KEY=value` form only). */
export function environmentOf(stage: Stage): Record<string, string> {
  const entries = find(stage, 'ENV').flatMap((instruction) =>
    [...instruction.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)].map(
      ([, key, value]) => [key as string, (value as string).replace(/^"|"$/g, '')] as const,
    ),
  )
  return Object.fromEntries(entries)
}

/** The exec form of ENTRYPOINT, CMD or HEALTHCHECK's CMD: a JSON array. */
export function execForm(args: string): string[] {
  const json = args.slice(args.indexOf('['))
  return JSON.parse(json) as string[]
}
