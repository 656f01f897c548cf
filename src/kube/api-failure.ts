// How a failed request to the Kubernetes API is named: the HTTP status and the Status object's message and
// causes (the 429 of a PodDisruptionBudget names the budget in its causes), or no answer at all. Shared by the
// client-node callers (src/kube/drain-client.ts) and the plain GETs through a server (src/kube/get-reads.ts);
// it loads no API client.
import { CauseError } from '../errors.ts';
import type { StatusCause } from '../k3s/drain.ts';

/** What an HTTP failure of the client says: its status, and the Status object's message and causes. */
export interface ApiFailure {
  status: number;
  message: string;
  causes: StatusCause[];
}

/**
 * The HTTP status and Status body of a failed request, or undefined when no HTTP answer came. client-node 1.x
 * throws an ApiException whose `body` is the response text (a JSON Status), an object, or undefined (401).
 */
export function apiFailure(err: unknown): ApiFailure | undefined {
  const e = err as { code?: unknown; body?: unknown; message?: unknown } | null;
  if (!e || typeof e !== 'object' || typeof e.code !== 'number' || !('body' in e)) return undefined;
  let body: unknown = e.body;
  if (typeof body === 'string') {
    const text = body;
    try {
      body = JSON.parse(text);
    } catch {
      body = { message: text.trim().slice(0, 500) };
    }
  }
  const status = (body && typeof body === 'object' ? body : {}) as { message?: unknown; reason?: unknown; details?: { causes?: unknown } };
  const causes = Array.isArray(status.details?.causes)
    ? (status.details.causes as unknown[]).flatMap((c) => {
        if (!c || typeof c !== 'object') return [];
        // metav1.StatusCause's Type travels as "reason" on the wire.
        const { reason, message } = c as Record<string, unknown>;
        const type = reason ?? (c as Record<string, unknown>).type;
        return [{ ...(typeof type === 'string' && { type }), ...(typeof message === 'string' && { message }) }];
      })
    : [];
  const message = typeof status.message === 'string' && status.message ? status.message : typeof status.reason === 'string' ? status.reason : httpWords(e.code);
  return { status: e.code, message, causes };
}

function httpWords(code: number): string {
  return code === 401 ? 'Unauthorized' : code === 403 ? 'Forbidden' : code === 404 ? 'Not Found' : `HTTP ${code}`;
}

/**
 * The CauseError of a request that failed: its HTTP status and message, or no answer at all — then the SSH
 * connection's refusal to forward it (SSH_FORWARD_FAILED) when that is why.
 */
export function failedAs(request: string, at: { node?: string; command: string }, err: unknown, forward?: unknown): CauseError {
  if (err instanceof CauseError) return err;
  const f = apiFailure(err);
  if (!f && forward instanceof CauseError) return forward;
  const seen = f ? `${request}: HTTP ${f.status} ${f.message}` : `${request}: no answer: ${(err as Error)?.message ?? String(err)}`;
  return new CauseError('KUBE_API_FAILED', {
    host: at.node,
    message: f ? `the Kubernetes API answered HTTP ${f.status} to ${request}: ${f.message}` : `no answer from the Kubernetes API to ${request}`,
    cause: err,
    evidence: {
      command: at.command,
      seen,
      excerpt: f?.causes.map((c) => `${c.type ?? ''}: ${c.message ?? ''}`).join('\n') || undefined,
    },
  });
}
