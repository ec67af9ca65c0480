// Sending a file's bytes where an announced upload says (`upload` of `POST .../documents`), with
// an XMLHttpRequest for its progress (fetch reports none for what it sends). `PUT` sends the file
// as the body: to the service itself (its own path, same origin, so the cookie and the Origin
// header go with it, as application/octet-stream) or to a pre-signed URL elsewhere (with the
// headers the target lists, exactly, and no cookie); `POST` sends a form of the target's fields
// and then the file, as a pre-signed S3 form upload takes it.
import { ApiFailure } from './api';
import type { AdminDocument } from './admin';
import type { ErrorBody, Schemas } from './wire';

export type UploadTarget = Schemas['UploadTarget'];

/** Bytes sent so far of how many. */
export type Progress = (loaded: number, total: number) => void;

/** Sends `file` as `target` says, telling `progress` as it goes. Resolves with the document as the
 *  service now has it when it answered with one (the service itself), else null; rejects with an
 *  ApiFailure (status 0 when the network failed). */
export function sendFile(target: UploadTarget, file: Blob, progress: Progress): Promise<AdminDocument | null> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const own = target.url.startsWith('/');
    xhr.open(target.method, target.url);
    xhr.withCredentials = own;
    xhr.upload.addEventListener('progress', (e) => progress(e.loaded, e.lengthComputable ? e.total : file.size));
    xhr.addEventListener('load', () => {
      const body = parse(xhr.responseText);
      if (xhr.status >= 200 && xhr.status < 300) {
        progress(file.size, file.size);
        resolve(own && body && typeof body === 'object' && 'id' in body ? (body as AdminDocument) : null);
        return;
      }
      const err = (body as ErrorBody | null)?.error;
      reject(new ApiFailure(xhr.status, err?.code ?? `http_${xhr.status}`, err?.message ?? xhr.statusText, undefined, (body as ErrorBody | null) ?? undefined));
    });
    const lost = () => reject(new ApiFailure(0, 'network', 'network unreachable'));
    xhr.addEventListener('error', lost);
    xhr.addEventListener('abort', lost);
    xhr.addEventListener('timeout', lost);
    if (target.method === 'POST') {
      const form = new FormData();
      for (const [name, value] of target.fields) form.append(name, value);
      form.append('file', file);
      xhr.send(form);
    } else {
      // Content-Length is the browser's to send.
      const headers = target.headers.filter(([name]) => name.toLowerCase() !== 'content-length');
      for (const [name, value] of headers) xhr.setRequestHeader(name, value);
      if (own && !headers.some(([name]) => name.toLowerCase() === 'content-type')) {
        xhr.setRequestHeader('content-type', 'application/octet-stream');
      }
      xhr.send(file);
    }
  });
}

function parse(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}
