import { defineCauses } from './define.ts';

// Add-on images on an air-gapped site (k3s.imageArchives; src/images, the add-on gates).
export const imageCauses = defineCauses({
  IMAGE_ARCHIVE_INVALID: {
    title: 'An image archive the inventory names cannot be imported',
    meaning:
      'A file under k3s.imageArchives has another sha256 than the inventory gives, or is not an image archive k3s can import (a tar with an OCI index.json or a docker save manifest.json). Checked on this machine before any host changes.',
    remedy: 'Replace the file with the archive meant (or correct its sha256 in the inventory), then rerun.',
  },
  IMAGE_NOT_IN_ARCHIVES: {
    title: 'An add-on image is in none of the image archives',
    meaning:
      'The site is air-gapped (k3s.imageArchives names archives), but an image that kube-vip, Cilium or Flux will pull is in none of them, or is there only by tag while the chart pins its digest (a docker save archive keeps no registry digest). Its pods would stay in ImagePullBackOff. Checked before any host changes.',
    remedy:
      "Add an archive holding the image named to k3s.imageArchives: for a digest-pinned image an OCI archive of the registry's manifest (skopeo copy --all docker://<image> oci-archive:<file>.tar:<name:tag>), then rerun.",
  },
  IMAGE_NOT_AVAILABLE: {
    title: 'A pod cannot start: its image is not on the node and cannot be pulled',
    meaning:
      "The kubelet reports ErrImagePull or ImagePullBackOff for an add-on's container: the image was not imported on that node from agent/images and no registry is reachable from it.",
    remedy:
      'Put an archive holding the image named in k3s.imageArchives (an OCI archive when the image is pinned by digest) and rerun: the engine places it on every node and k3s imports it within seconds. On a site with a registry, the kubelet message in the evidence says why the named node could not pull it.',
  },
});
