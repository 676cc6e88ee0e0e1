import { QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { Router } from 'wouter';
import { App } from './App.tsx';
import { queryClient } from './query-client.ts';
import { BASE } from './session.ts';
import './styles.css';

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root');

createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <Router base={BASE}>
        <App />
      </Router>
    </QueryClientProvider>
  </StrictMode>,
);
