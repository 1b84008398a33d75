// SPDX-License-Identifier: MIT
// What went wrong on one communicator, under a lock of its own: the first asynchronous error
// (its code, kept in the atomic the backends read without a lock, and its message) and the peer
// watch's verdicts (a peer died or aborted; a peer left). The text of a failure that names the
// peer behind it is composed here, from one consistent reading of all of them.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "starscream/starscream.h"

namespace ssc {

class FailureRecord {
 public:
  // `code` is the communicator's asyncError (CommView): sscSuccess, sscInProgress while a
  // non-blocking init runs, or the first error. The record writes it only under its lock,
  // together with the message; others may read it at any time.
  explicit FailureRecord(std::atomic<int>& code) : code_(code) {}
  FailureRecord(const FailureRecord&) = delete;
  FailureRecord& operator=(const FailureRecord&) = delete;

  // Records an asynchronous failure: the first one wins, except over sscInProgress (a
  // non-blocking init that fails replaces it). True when this one was recorded.
  bool recordError(sscResult_t code, const std::string& message);
  // A non-blocking init: sscInProgress from its start; at its successful end, sscSuccess unless
  // a failure was recorded meanwhile (the peer watch runs during init), which then stays.
  void initStarted();
  void initSucceeded();
  // The message of the recorded failure ("" when none).
  std::string message() const;

  // The peer watch's verdict that a peer died or aborted (or was given up on): new calls fail
  // with this text, but an idle communicator is not in error (peers of a job that tears down by
  // aborting must not see failures). The first verdict stays; true when this one did.
  bool notePeerGone(const std::string& why);
  std::string peerGone() const;
  // The first peer departure ("rank 2 destroyed its communicator ..."): it fails nothing by
  // itself, but is named in the text of a wait that fails. The first one stays; true when this
  // one did.
  bool notePeerLeft(const std::string& why);
  std::string peerLeft() const;

  // `local` (a failure this rank saw, such as "aborted while waiting for rank 3") with the reason
  // behind it. `aborted` (the communicator's abort flag): the reason is the peer that died or
  // aborted, else the recorded failure, put first ("why (local)"); not aborted: a wait ran out of
  // time or failed by itself, most likely for a peer that left, which is added as a note. Nothing
  // is added that `local` already says.
  std::string text(const std::string& local, bool aborted) const;

 private:
  mutable std::mutex mu_;
  std::atomic<int>& code_;
  std::string message_;
  std::string peerGone_;
  std::string peerLeft_;
};

}  // namespace ssc
