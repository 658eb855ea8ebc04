# SPDX-License-Identifier: MIT
"""The ctypes side: finding libdshsandbox.so.0, the structures the calls pass, the prototypes.

Only what a call passes in is mirrored here (dsb_call_setup, dsb_call_request, the approval
request a callback is given) plus dsb_call_result, whose storage the caller provides and whose
text is read as bytes; everything else of a result is read from dsb_call_render_json(), the
stable interface. tests/python/test_layout.py checks every size and offset below against the C
headers, so a header change cannot silently corrupt a call.
"""
import ctypes
import os
import threading
from typing import Optional

SONAME = "libdshsandbox.so.0"
ENV = "DSH_SANDBOX_LIBRARY"

c_char_pp = ctypes.POINTER(ctypes.c_char_p)


class LibraryNotFound(OSError):
    """libdshsandbox.so.0 could not be loaded; the message says where it was looked for."""


class Error(ctypes.Structure):  # dsb_error
    _fields_ = [
        ("code", ctypes.c_int),
        ("sys_errno", ctypes.c_int),
        ("subject", ctypes.c_char * 1024),
        ("message", ctypes.c_char * 2048),
    ]


class Setup(ctypes.Structure):  # dsb_call_setup
    _fields_ = [
        ("config_path", ctypes.c_char_p),
        ("store_path", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("limits", ctypes.c_void_p),
        ("writable_roots", c_char_pp),
    ]


class Request(ctypes.Structure):  # dsb_call_request
    _fields_ = [
        ("tool", ctypes.c_int),
        ("session", ctypes.c_char_p),
        ("mode", ctypes.c_int),
        ("workspace", ctypes.c_char_p),
        ("backend", ctypes.c_int),
        ("command", ctypes.c_char_p),
        ("argv", c_char_pp),
        ("workdir", ctypes.c_char_p),
        ("timeout_ms", ctypes.c_uint64),
        ("path", ctypes.c_char_p),
        ("content", ctypes.c_char_p),  # with content_len: may hold NUL bytes
        ("content_len", ctypes.c_size_t),
        ("content_fd", ctypes.c_int),
        ("old_string", ctypes.c_char_p),
        ("new_string", ctypes.c_char_p),
        ("replace_all", ctypes.c_bool),
        ("sandbox_permissions", ctypes.c_char_p),
        ("justification", ctypes.c_char_p),
        ("call_id", ctypes.c_char_p),
        ("network", ctypes.c_int),
    ]


class Output(ctypes.Structure):  # dsb_output
    _fields_ = [
        ("text", ctypes.c_void_p),
        ("len", ctypes.c_size_t),
        ("truncated", ctypes.c_bool),
        ("spill_path", ctypes.c_char_p),
    ]


class RunResult(ctypes.Structure):  # dsb_run_result
    _fields_ = [
        ("exit_code", ctypes.c_int),
        ("signal", ctypes.c_int),
        ("timed_out", ctypes.c_bool),
        ("timeout_ms", ctypes.c_uint64),
        ("out", Output),
        ("err", Output),
        ("sandboxed", ctypes.c_bool),
        ("mode", ctypes.c_int),
        ("denied", ctypes.c_bool),
        ("has_enforcement", ctypes.c_bool),
        ("enforcement", ctypes.c_int),
        ("protected_note", ctypes.c_char_p),
        ("network_note", ctypes.c_char_p),
        ("limits_hit", ctypes.c_uint),
        ("limit_note", ctypes.c_char_p),
        ("undone_note", ctypes.c_char_p),
        ("aborted", ctypes.c_bool),
        ("evidence", ctypes.c_bool),
        ("n_refused", ctypes.c_uint),
        ("refused", ctypes.c_void_p),  # dsb_refusal[n_refused_named]: read from the JSON
        ("n_refused_named", ctypes.c_size_t),
        ("refusal_note", ctypes.c_char_p),
    ]


class Result(ctypes.Structure):  # dsb_call_result
    _fields_ = [
        ("tool", ctypes.c_int),
        ("is_error", ctypes.c_bool),
        ("error", Error),
        ("prepared", ctypes.c_bool),
        ("text", ctypes.c_void_p),  # may hold NUL bytes: read with text_len
        ("text_len", ctypes.c_size_t),
        ("run", RunResult),
        ("path", ctypes.c_char_p),
        ("created", ctypes.c_bool),
        ("replacements", ctypes.c_size_t),
        ("replaced_all", ctypes.c_bool),
    ]


class ApprovalRequest(ctypes.Structure):  # dsb_approval_request
    _fields_ = [
        ("id", ctypes.c_char_p),
        ("tool_name", ctypes.c_char_p),
        ("call_id", ctypes.c_char_p),
        ("reason", ctypes.c_char_p),
        ("subject", ctypes.c_char_p),
        ("session_id", ctypes.c_char_p),
        ("timeout_ms", ctypes.c_uint64),
        ("mode", ctypes.c_char_p),
        ("justification", ctypes.c_char_p),
        ("refused", ctypes.c_char_p),
    ]


# Every structure above, by its C name, for the layout test.
STRUCTS = {
    "dsb_error": Error,
    "dsb_call_setup": Setup,
    "dsb_call_request": Request,
    "dsb_output": Output,
    "dsb_run_result": RunResult,
    "dsb_call_result": Result,
    "dsb_approval_request": ApprovalRequest,
}

ANSWERER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ApprovalRequest), ctypes.c_void_p,
                            ctypes.POINTER(ctypes.c_int))
ON_OUTPUT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char),
                             ctypes.c_size_t)

_P = ctypes.c_void_p
_ERR = ctypes.POINTER(Error)
_PROTOTYPES = {
    "dsb_version": (ctypes.c_char_p, []),
    "dsb_code_name": (ctypes.c_char_p, [ctypes.c_int]),
    "dsb_mode_from_string": (ctypes.c_int, [ctypes.c_char_p]),
    "dsb_backend_from_string": (ctypes.c_int, [ctypes.c_char_p]),
    "dsb_network_access_from_string": (ctypes.c_int, [ctypes.c_char_p]),
    "dsb_tool_from_string": (ctypes.c_int, [ctypes.c_char_p]),
    "dsb_approval_outcome_from_string": (ctypes.c_int, [ctypes.c_char_p]),
    "dsb_call_new": (ctypes.c_int, [ctypes.POINTER(Setup), ctypes.POINTER(_P), _ERR]),
    "dsb_call_free": (_P, [_P]),
    "dsb_call_set_answerer": (None, [_P, ANSWERER, _P]),
    "dsb_call_set_on_output": (None, [_P, ON_OUTPUT, _P]),
    "dsb_call_set_capture": (None, [_P, ctypes.c_bool]),
    "dsb_call_run": (ctypes.c_int, [_P, ctypes.POINTER(Request), ctypes.POINTER(Result), _ERR]),
    "dsb_call_cancel": (None, [_P]),
    "dsb_call_result_done": (None, [ctypes.POINTER(Result)]),
    "dsb_call_render_json": (ctypes.c_int, [ctypes.POINTER(Result), ctypes.POINTER(_P), _ERR]),
    "dsb_call_approval_note": (ctypes.c_char_p, [_P]),
    "dsb_store_open": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(_P), _ERR]),
    "dsb_store_free": (_P, [_P]),
    "dsb_store_root": (ctypes.c_char_p, [_P]),
    "dsb_session_create": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P), _ERR]),
    "dsb_session_open": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P), _ERR]),
    "dsb_session_free": (_P, [_P]),
    "dsb_session_id": (ctypes.c_char_p, [_P]),
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


def free(p: int) -> None:
    """free() of what the library allocated for the caller (dsb_call_render_json())."""
    _libc.free(p)


def load() -> ctypes.CDLL:
    """The library, loaded once per process: $DSH_SANDBOX_LIBRARY, else the dynamic loader's
    search for libdshsandbox.so.0."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        path = os.environ.get(ENV) or ""
        try:
            lib = ctypes.CDLL(path or SONAME)
        except OSError as e:
            if path:
                where = f"{ENV}={path}"
            else:
                where = (f"the dynamic loader's search for {SONAME} ({ENV} unset; "
                         "LD_LIBRARY_PATH, /etc/ld.so.cache, /lib, /usr/lib)")
            raise LibraryNotFound(
                f"dsh_sandbox: cannot load libdshsandbox: looked in {where}: {e}. Install "
                f"libdshsandbox0, or set {ENV} to the library's path") from None
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        _lib = lib
        return lib
