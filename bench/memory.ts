import type { Scenario } from './support/scenario.ts'
export const memory: Scenario = { name: 'memory', title: 'memory', run: async () => { throw new Error('not yet') } }
