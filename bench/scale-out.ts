import type { Scenario } from './support/scenario.ts'
export const scaleOut: Scenario = { name: 'scale-out', title: 'scale-out', run: async () => { throw new Error('not yet') } }
