import { render } from 'preact';
import { App } from './App.tsx';
import './styles/app.css';

render(<App />, document.getElementById('app')!);
