// A signal that aborts when `parent` does or `ms` have passed. Built on an AbortController and a timer
// instead of AbortSignal.any([parent, AbortSignal.timeout(ms)]): Node holds the sources of AbortSignal.any
// weakly, and a timeout signal nothing else references can be garbage collected before it fires — the
// composed signal then never aborts on time (a 30 s Flux wait ran its whole 300 s budget in the lab).
// Here the pending timer holds the controller until it fires or the parent aborts.
export function withDeadline(parent: AbortSignal, ms: number): AbortSignal {
  const ac = new AbortController();
  if (parent.aborted) {
    ac.abort(parent.reason);
    return ac.signal;
  }
  const timer = setTimeout(() => ac.abort(new DOMException(`deadline of ${ms} ms passed`, 'TimeoutError')), ms);
  timer.unref();
  parent.addEventListener(
    'abort',
    () => {
      clearTimeout(timer);
      ac.abort(parent.reason);
    },
    { once: true },
  );
  return ac.signal;
}
