// The chat's frame: a skip link to the message box, and on a phone a top bar whose menu button
// opens the sidebar as a drawer (Escape, the scrim or a choice in it closes it; focus moves into
// it and back to the button).
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/** Focuses the composer (the message box), as the skip link and a new chat do. */
export function focusComposer(): void {
  document.getElementById('message')?.focus();
}

export function ChatLayout(props: { heading: string; children: (close: () => void) => ComponentChildren }) {
  const [open, setOpen] = useState(false);
  const menu = useRef<HTMLButtonElement>(null);
  const close = () => setOpen(false);
  useEffect(() => {
    if (open) document.querySelector<HTMLElement>('#sidebar button, #sidebar a')?.focus();
  }, [open]);
  // The listener lives for the page and asks the latest render whether the drawer is open, so
  // it takes an Escape from the moment the drawer shows.
  const isOpen = useRef(open);
  isOpen.current = open;
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape' || !isOpen.current) return;
      // The drawer takes this Escape: a running turn is not stopped by closing it.
      e.preventDefault();
      e.stopImmediatePropagation();
      setOpen(false);
      menu.current?.focus();
    };
    document.addEventListener('keydown', onKey, true);
    return () => document.removeEventListener('keydown', onKey, true);
  }, []);
  return (
    <div class={`layout chat-layout${open ? ' drawer-open' : ''}`}>
      <a
        class="skip-link"
        href="#message"
        onClick={(e) => {
          e.preventDefault();
          focusComposer();
        }}
      >
        Skip to the message box
      </a>
      <header class="topbar">
        <button type="button" ref={menu} aria-expanded={open} aria-controls="sidebar" onClick={() => setOpen(!open)}>
          Conversations
        </button>
        <span class="heading">{props.heading}</span>
      </header>
      <div class="scrim" onClick={close} />
      {props.children(close)}
    </div>
  );
}
