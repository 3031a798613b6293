import { createDatabase, startPostgres } from '/work/wt/scale/scripts/embedded-postgres.js'
const server = await startPostgres()
const url = await createDatabase(server, 'dbg')
console.log(url)
process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)))
setInterval(() => {}, 1000)
