// agentchart/adapters/deepseek: the DeepSeek adapter on its own subpath (the
// same function agentchart/adapters/openai exports; it needs the `openai` package).
export { deepseekModel } from './openai.js'
export type { DeepSeekModelOptions, DeepSeekReasoningEffort } from './openai.js'
