#!/usr/bin/env node
// Launches the mock Unreal app (../mock-unreal.ts) through tsx's loader, so it runs without a build
// step and can be spawned like a packaged game binary: mock-unreal.mjs <Project> -PixelStreamingURL=…
import { register } from 'tsx/esm/api';

register();
await import('../mock-unreal.ts');
