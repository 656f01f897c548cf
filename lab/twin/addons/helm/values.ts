// Helm's values: the chart's values.yaml coalesced with the user's (chartutil.CoalesceValues): maps merge
// key by key, anything else from the user replaces the default, a user null removes the key.
const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function coalesce(defaults: unknown, user: unknown): unknown {
  if (!isMap(user)) return user === undefined ? defaults : user;
  const out: Record<string, unknown> = isMap(defaults) ? { ...defaults } : {};
  for (const [k, v] of Object.entries(user)) {
    if (v === null) delete out[k];
    else out[k] = isMap(v) && isMap(out[k]) ? coalesce(out[k], v) : v;
  }
  return out;
}
