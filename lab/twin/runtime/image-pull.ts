// The kubelet's image pull for a container whose image the node lacks (kubernetes/kubernetes v1.33
// pkg/kubelet/images/image_manager.go EnsureImageExists; back-off from pkg/kubelet/kubelet.go
// imageBackOffPeriod = 10 s, MaxImageBackOff = 300 s, doubled per failure by client-go flowcontrol.Backoff):
// a pull that fails leaves the container waiting `ErrImagePull` with the runtime's error as message; the
// next pod sync inside the back-off shows `ImagePullBackOff` "Back-off pulling image "<image>""; when the
// back-off ends the pull is tried again. Once the image is there (an archive imported) the container starts.
import type { ContainerState, Running } from '../addons/daemonsets.ts';
import type { NodeImages } from './images.ts';

const IMAGE_BACKOFF_MS = 10_000;
const MAX_IMAGE_BACKOFF_MS = 300_000;
/** How soon after a failed pull the kubelet's next sync of the pod reports the back-off. */
const RESYNC_MS = 1_000;

export function pullWithBackOff(images: NodeImages, image: string, state: (s: ContainerState) => void, started: () => void): Running {
  let backoff = IMAGE_BACKOFF_MS;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const attempt = () => {
    if (stopped) return;
    if (images.has(image)) {
      started();
      return;
    }
    state({ ready: false, waiting: { reason: 'ErrImagePull', message: images.pullError(image) } });
    timer = setTimeout(() => {
      if (stopped) return;
      state({ ready: false, waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` } });
      timer = setTimeout(attempt, backoff - RESYNC_MS);
      backoff = Math.min(backoff * 2, MAX_IMAGE_BACKOFF_MS);
    }, RESYNC_MS);
  };
  attempt();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
