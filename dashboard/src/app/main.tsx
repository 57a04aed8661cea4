// The dashboard's entry point: renders the app into the shell's mount point (page.ts), whose
// data-base-path is the dashboard's public path.
import { render } from 'preact';
import { App } from './app';
import './styles.css';

const mount = document.getElementById('pixelfleet-dashboard');
if (mount !== null) render(<App basePath={mount.dataset.basePath ?? ''} />, mount);
