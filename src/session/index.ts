// The session module: vocabulary (schemas), the lossless-JSON gate, and the log.
export * from './schemas.js'
export * from './lossless.js'
export * from './session.js'
