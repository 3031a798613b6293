// The session module: vocabulary (schemas), the lossless-JSON gate, and the log.
export * from './schemas.js'
export { parseArguments, UNKNOWN_OUTCOME, NOT_STARTED, SUMMARY_SOURCE, summaryText } from './vocabulary.js'
export * from './lossless.js'
export * from './session.js'
