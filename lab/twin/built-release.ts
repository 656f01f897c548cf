// The release this twin is. Run from source (unit tests) it is the default one; lab/twin/build.ts replaces
// this module in the bundle with the release it builds, so a bundle holds its own release's data only.
export { DEFAULT_TWIN_RELEASE as RELEASE } from './releases.ts';
