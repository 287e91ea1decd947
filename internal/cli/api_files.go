package cli

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/sandboxer/sandboxer/adapter"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/errs"
)

// The files endpoints move whole files by path (?path=, relative to the workspace or absolute
// inside it): GET downloads the bytes, PUT uploads them (replacing the file atomically, parents
// made), DELETE removes one; stat, list, symlink and executable mirror adapter.Statter,
// adapter.Lister and adapter.ModeWriter. The jail is the adapter's: a path that leaves the
// workspace is TOOL_PATH_ESCAPE, as in the tools.

// filePath is the request's ?path=.
func filePath(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if p == "" {
		return "", errs.New(errs.PathInvalid, "", "", "query parameter path is required")
	}
	return p, nil
}

func (a *apiServer) readFile(w http.ResponseWriter, r *http.Request) error {
	p, err := filePath(r)
	if err != nil {
		return err
	}
	box, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	w.Header().Set("Content-Type", "application/octet-stream")
	if fs, ok := box.sb.(adapter.FileStreamer); ok {
		// Streamed: the size the file had when opened, and no more.
		// The limit is for an adapter that cannot stream this file and reads it whole instead.
		f, size, err := fs.OpenFile(adapter.WithReadLimit(r.Context(), a.opt.MaxFileBytes), p)
		if err != nil {
			return err
		}
		defer f.Close()
		if size > a.opt.MaxFileBytes {
			return adapter.FileTooLarge("read", p, size, a.opt.MaxFileBytes)
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		io.Copy(w, io.LimitReader(f, size))
		return nil
	}
	data, err := box.sb.ReadFile(adapter.WithReadLimit(r.Context(), a.opt.MaxFileBytes), p)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data)
	return nil
}

func (a *apiServer) writeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := filePath(r)
	if err != nil {
		return err
	}
	box, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	defer release()
	if r.ContentLength > a.opt.MaxFileBytes {
		return tooLarge(r.ContentLength, a.opt.MaxFileBytes)
	}
	body := io.Reader(&uploadBody{r: http.MaxBytesReader(w, r.Body, a.opt.MaxFileBytes), req: r})
	bodyErr := func(err error) error {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(mbe.Limit+1, a.opt.MaxFileBytes)
		}
		return errs.Wrap(errs.InvalidInput, "", "", fmt.Errorf("reading the body: %w", err))
	}
	if fs, ok := box.sb.(adapter.FileStreamer); ok {
		// Streamed to a temporary file: a body cut short leaves the file as it was.
		n, err := fs.WriteFileFrom(r.Context(), p, body)
		if err != nil {
			if _, coded := errors.AsType[*errs.Error](err); !coded {
				return bodyErr(err) // the body's error: the request's, not the sandbox's
			}
			return err
		}
		writeJSON(w, http.StatusOK, api.FileWritten{Path: p, Size: n})
		return nil
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return bodyErr(err)
	}
	if err := box.sb.WriteFile(r.Context(), p, data); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.FileWritten{Path: p, Size: int64(len(data))})
	return nil
}

// uploadBody is an upload's body that ends in an error, not at its end, when the client's
// trailer says the upload was aborted (api.TrailerUpload): the temporary file is then removed
// before the answer goes back.
type uploadBody struct {
	r   io.Reader
	req *http.Request
}

var errUploadAborted = errors.New("the client aborted the upload (its source failed)")

func (b *uploadBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF && b.req.Trailer.Get(api.TrailerUpload) == api.UploadAborted {
		return n, errUploadAborted
	}
	return n, err
}

func tooLarge(size, limit int64) error {
	e := errs.New(errs.FileTooLarge, "", "", "file is %d bytes or more, more than the server's limit of %d (--max-file-bytes)", size, limit)
	e.Details = map[string]any{"bytes": size, "limit": limit}
	return e
}

// fileOp finds the sandbox and checks that it has the optional interface T.
func fileOp[T any](a *apiServer, r *http.Request, what string) (T, *apiSandbox, func(), error) {
	var zero T
	box, release, err := a.reg.acquire(r, r.PathValue("id"))
	if err != nil {
		return zero, nil, nil, err
	}
	x, ok := box.sb.(T)
	if !ok {
		release()
		return zero, nil, nil, errs.New(errs.InvalidInput, "", "", "the %s adapter cannot %s", box.s.Adapter, what)
	}
	return x, box, release, nil
}

func (a *apiServer) removeFile(w http.ResponseWriter, r *http.Request) error {
	p, err := filePath(r)
	if err != nil {
		return err
	}
	rm, _, release, err := fileOp[adapter.Remover](a, r, "remove files")
	if err != nil {
		return err
	}
	defer release()
	if err := rm.RemoveFile(r.Context(), p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *apiServer) statFile(w http.ResponseWriter, r *http.Request) error {
	p, err := filePath(r)
	if err != nil {
		return err
	}
	st, _, release, err := fileOp[adapter.Statter](a, r, "stat files")
	if err != nil {
		return err
	}
	defer release()
	fi, err := st.StatFile(r.Context(), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.FileOf(fi))
	return nil
}

func (a *apiServer) listFiles(w http.ResponseWriter, r *http.Request) error {
	ls, _, release, err := fileOp[adapter.Lister](a, r, "list files")
	if err != nil {
		return err
	}
	defer release()
	list, err := ls.ListFiles(r.Context(), r.URL.Query().Get("dir"))
	if err != nil {
		return err
	}
	views := make([]api.File, 0, len(list))
	for _, fi := range list {
		views = append(views, api.FileOf(fi))
	}
	writeJSON(w, http.StatusOK, api.FileList{Files: views})
	return nil
}

func (a *apiServer) symlink(w http.ResponseWriter, r *http.Request) error {
	var req api.SymlinkRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	mw, _, release, err := fileOp[adapter.ModeWriter](a, r, "make symbolic links")
	if err != nil {
		return err
	}
	defer release()
	if err := mw.Symlink(r.Context(), req.Path, req.Target); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, req)
	return nil
}

func (a *apiServer) setExecutable(w http.ResponseWriter, r *http.Request) error {
	var req api.ExecutableRequest
	if err := a.decodeJSON(w, r, &req); err != nil {
		return err
	}
	mw, _, release, err := fileOp[adapter.ModeWriter](a, r, "set modes")
	if err != nil {
		return err
	}
	defer release()
	if err := mw.SetExecutable(r.Context(), req.Path, req.Executable); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, req)
	return nil
}
