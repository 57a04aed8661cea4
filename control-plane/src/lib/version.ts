// The control plane's version (its package.json), for `--version` and the start log.
import controlPlanePackage from '../../package.json' with { type: 'json' };

export const CONTROL_PLANE_VERSION: string = controlPlanePackage.version;
