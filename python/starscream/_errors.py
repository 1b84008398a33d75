# SPDX-License-Identifier: MIT
"""The package's exceptions (standard library only)."""

# sscResult_t (starscream.h): names by value, for messages.
RESULT_NAMES = {
    0: "sscSuccess", 1: "sscUnhandledDeviceError", 2: "sscSystemError", 3: "sscInternalError",
    4: "sscInvalidArgument", 5: "sscInvalidUsage", 6: "sscRemoteError", 7: "sscInProgress",
    8: "sscTimeout",
}


class StarscreamError(RuntimeError):
    """A Starscream call failed. `code` is its sscResult_t (None for errors of the package
    itself), `call` the C function, and the message carries sscGetLastError's text."""

    def __init__(self, message, code=None, call=None):
        super().__init__(message)
        self.code = code
        self.call = call


class LibraryNotFoundError(StarscreamError):
    """libstarscream.so or libstarscream-nccl.so is in none of the places searched; the
    message lists each."""

    def __init__(self, name, looked, hint=None):
        lines = [f"{name} not found. Looked in, in order:"] + [f"  - {w}" for w in looked]
        if hint:
            lines.append(f"To fix: {hint}.")
        super().__init__("\n".join(lines))
        self.name = name
        self.looked = list(looked)


class VerifyError(StarscreamError):
    """starscream.verify(): PyTorch's NCCL calls in this process would not reach Starscream."""
