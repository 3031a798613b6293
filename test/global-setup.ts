// Runs once before the test files: the viewer's page is served from its
// compiled output (dist/viewer/assets), so build it when its sources changed.
import { buildViewerPage, viewerPageStale } from '../scripts/build-viewer.js'

export default function setup(): void {
  if (viewerPageStale()) buildViewerPage()
}
