// A Temporal worker in its own process (for the kill-and-restart test in test/video.test.ts):
// the project's worker (bin/worker.ts createWorker) on the task queue TEMPORAL_TASK_QUEUE,
// against DATABASE_URL and TEMPORAL_ADDRESS, with the catalog loaded. Prints "ready" when polling.
import { connectDatabase } from '../../activities/db.js';
import { loadCatalog } from '../../activities/catalog/catalog.js';
import { createWorker } from '../../bin/worker.js';

connectDatabase(process.env.DATABASE_URL!, 5);
await loadCatalog();
const worker = await createWorker(process.env.TEMPORAL_ADDRESS!);
process.on('SIGTERM', () => worker.shutdown());
const running = worker.run();
process.stdout.write('ready\n');
await running;
process.exit(0);
