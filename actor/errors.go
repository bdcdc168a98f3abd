package actor

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cellar-db/cellar/storage"
)

// This file is the one place where Redis's error reply texts live. Wire
// tests pin them byte for byte against Redis 7.

// ReplyError is an error reply, its text complete with the error code
// ("ERR ...", "WRONGTYPE ..."), without the leading '-'.
type ReplyError string

func (e ReplyError) Error() string { return string(e) }

const (
	ErrSyntax        ReplyError = "ERR syntax error"
	ErrNotInteger    ReplyError = "ERR value is not an integer or out of range"
	ErrNotFloat      ReplyError = "ERR value is not a valid float"
	ErrWrongType     ReplyError = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrOverflow      ReplyError = "ERR increment or decrement would overflow"
	ErrDecrOverflow  ReplyError = "ERR decrement would overflow"
	ErrIncrNaNOrInf  ReplyError = "ERR increment would produce NaN or Infinity"
	ErrNoSuchKey     ReplyError = "ERR no such key"
	ErrNoAuth        ReplyError = "NOAUTH Authentication required."
	ErrWrongPass     ReplyError = "WRONGPASS invalid username-password pair or user is disabled."
	ErrAuthNotSet    ReplyError = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	ErrHelloNoAuth   ReplyError = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	ErrNoProto       ReplyError = "NOPROTO unsupported protocol version"
	ErrDBIndex       ReplyError = "ERR DB index is out of range"
	ErrInvalidDB     ReplyError = "ERR invalid DB index"
	ErrSameObject    ReplyError = "ERR source and destination objects are the same"
	ErrStringTooLong ReplyError = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrOffsetRange   ReplyError = "ERR offset is out of range"
	ErrClientName    ReplyError = "ERR Client names cannot contain spaces, newlines or special characters."
	ErrNoSuchClient  ReplyError = "ERR No such client"

	// CLIENT TRACKING and CLIENT CACHING (tracking.go).
	ErrRedirectTwice      ReplyError = "ERR A client can only redirect to a single other client"
	ErrRedirectMissing    ReplyError = "ERR The client ID you want redirect to does not exist"
	ErrPrefixNeedsBcast   ReplyError = "ERR PREFIX option requires BCAST mode to be enabled"
	ErrBcastSwitch        ReplyError = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	ErrOptBcast           ReplyError = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	ErrOptBoth            ReplyError = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	ErrOptSwitch          ReplyError = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	ErrCachingNotTracking ReplyError = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	ErrCachingYes         ReplyError = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	ErrCachingNo          ReplyError = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
	ErrInvalidCursor      ReplyError = "ERR invalid cursor"
	ErrMaxClients         ReplyError = "ERR max number of clients reached"
	ErrNXAndXX            ReplyError = "ERR XX and NX options at the same time are not compatible"
	ErrGTLTNX             ReplyError = "ERR GT and LT options at the same time are not compatible"
	ErrNXWithGTLT         ReplyError = "ERR NX and XX, GT or LT options at the same time are not compatible"
	ErrTimeoutNotFloat    ReplyError = "ERR timeout is not a float or out of range"
	ErrTimeoutNegative    ReplyError = "ERR timeout is negative"
	ErrTooManyBlocked     ReplyError = "ERR too many blocked clients"
	ErrUnblocked          ReplyError = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
	ErrWritesFailing      ReplyError = "ERR Cellar is refusing writes: the last commit or fsync failed (see the server log)"
	ErrShuttingDown       ReplyError = "ERR Cellar is shutting down"
	ErrSaveInProgress     ReplyError = "ERR Background save already in progress"
	ErrNoShutdown         ReplyError = "ERR No shutdown in progress."
	ErrShutdownFailed     ReplyError = "ERR Errors trying to SHUTDOWN. Check logs."
	ErrIndexOutOfRange    ReplyError = "ERR index out of range"
	ErrCountNegative      ReplyError = "ERR value is out of range, must be positive"
	ErrBitOffset          ReplyError = "ERR bit offset is not an integer or out of range"
	ErrConfigGetArgs      ReplyError = "ERR wrong number of arguments for 'config|get' command"
	ErrUnknownSection     ReplyError = "ERR unknown section"
	ErrMinMaxNotFloat     ReplyError = "ERR min or max is not a float"
	ErrProtoVersion       ReplyError = "ERR Protocol version is not an integer or out of range"
	ErrInvalidClientID    ReplyError = "ERR Invalid client ID"
	ErrClientIDPositive   ReplyError = "ERR client-id should be greater than 0"
	ErrMinMaxLex          ReplyError = "ERR min or max not valid string range item"
	ErrResultNaN          ReplyError = "ERR resulting score is not a number (NaN)"
	ErrWeightNotFloat     ReplyError = "ERR weight value is not a float"
	ErrNumKeysPositive    ReplyError = "ERR numkeys should be greater than 0"
	ErrNoSuchKeyForMove   ReplyError = "ERR no such key"

	// Transactions, CLIENT REPLY and CLIENT PAUSE.
	ErrMultiNested    ReplyError = "ERR MULTI calls can not be nested"
	ErrExecNoMulti    ReplyError = "ERR EXEC without MULTI"
	ErrDiscardNoMulti ReplyError = "ERR DISCARD without MULTI"
	ErrWatchInMulti   ReplyError = "ERR WATCH inside MULTI is not allowed"
	ErrNotInMulti     ReplyError = "ERR Command not allowed inside a transaction"
	ErrExecAbort      ReplyError = "EXECABORT Transaction discarded because of previous errors."
	ErrPauseTimeout   ReplyError = "ERR timeout is not an integer or out of range"
	ErrPauseMode      ReplyError = "ERR CLIENT PAUSE mode must be WRITE or ALL"

	// Hashes, sets and sorted sets.
	ErrHashNotInteger      ReplyError = "ERR hash value is not an integer"
	ErrHashNotFloat        ReplyError = "ERR hash value is not a float"
	ErrNaNOrInfinity       ReplyError = "ERR value is NaN or Infinity"
	ErrValueOutOfRange     ReplyError = "ERR value is out of range"
	ErrRandomCountRange    ReplyError = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
	ErrNumKeysTooMany      ReplyError = "ERR Number of keys can't be greater than number of args"
	ErrLimitNegative       ReplyError = "ERR LIMIT can't be negative"
	ErrCountPositive       ReplyError = "ERR count should be greater than 0"
	ErrZAddGTLTNX          ReplyError = "ERR GT, LT, and/or NX options at the same time are not compatible"
	ErrZAddIncrPair        ReplyError = "ERR INCR option supports a single increment-element pair"
	ErrLimitNeedsByScore   ReplyError = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	ErrWithScoresByLex     ReplyError = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	ErrRandomCountTooLarge ReplyError = "ERR count is out of range: Cellar returns at most 16777216 elements with repeats"
	ErrRandomReplyTooLarge ReplyError = "ERR reply would exceed proto-max-bulk-len: ask for fewer random elements"

	// Lists (LPOS).
	ErrRankZero          ReplyError = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	ErrLPosCountNegative ReplyError = "ERR COUNT can't be negative"
	ErrMaxLenNegative    ReplyError = "ERR MAXLEN can't be negative"

	// Keys, server and clients.
	ErrNoLFU           ReplyError = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	ErrInvalidCommand  ReplyError = "ERR Invalid command specified"
	ErrCommandNoKeys   ReplyError = "ERR The command has no key arguments"
	ErrInvalidArgCount ReplyError = "ERR Invalid number of arguments specified for command"
	ErrInvalidKeyArgs  ReplyError = "ERR Invalid arguments specified for command"
	ErrLFUSelected     ReplyError = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	ErrFirstDBIndex    ReplyError = "ERR invalid first DB index"
	ErrSecondDBIndex   ReplyError = "ERR invalid second DB index"
	ErrUnblockReason   ReplyError = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
)

// ErrShutdownDenyBlocking answers SHUTDOWN that would wait for replicas
// from a client that cannot wait (shutdown.go).
const ErrShutdownDenyBlocking ReplyError = "ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client"

// Streams (Redis's src/t_stream.c).
const (
	ErrInvalidStreamID          ReplyError = "ERR Invalid stream ID specified as stream command argument"
	ErrStreamStartInterval      ReplyError = "ERR invalid start ID for the interval"
	ErrStreamEndInterval        ReplyError = "ERR invalid end ID for the interval"
	ErrMaxLenAndMinID           ReplyError = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	ErrStreamMaxLen             ReplyError = "ERR The MAXLEN argument must be >= 0."
	ErrStreamLimit              ReplyError = "ERR The LIMIT argument must be >= 0."
	ErrLimitWithoutTrim         ReplyError = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	ErrLimitWithoutApprox       ReplyError = "ERR syntax error, LIMIT cannot be used without the special ~ option"
	ErrXTrimStrategy            ReplyError = "ERR syntax error, XTRIM must be called with a trimming strategy"
	ErrStreamIDZero             ReplyError = "ERR The ID specified in XADD must be greater than 0-0"
	ErrStreamIDTooSmall         ReplyError = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	ErrStreamElementsTooLarge   ReplyError = "ERR Elements are too large to be stored"
	ErrStreamExhausted          ReplyError = "ERR The stream has exhausted the last possible ID, unable to add more items"
	ErrTimeoutNotInteger        ReplyError = "ERR timeout is not an integer or out of range"
	ErrTimeoutOutOfRange        ReplyError = "ERR timeout is out of range"
	ErrUnbalancedStreams        ReplyError = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified." // XREADGROUP's too
	ErrXReadGroupOption         ReplyError = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
	ErrXReadNoAck               ReplyError = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
	ErrXReadGroupMissing        ReplyError = "ERR Missing GROUP option for XREADGROUP"
	ErrXReadGreater             ReplyError = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
	ErrXReadGroupDollar         ReplyError = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
	ErrStreamGone               ReplyError = "UNBLOCKED the stream key no longer exists"
	ErrGroupGone                ReplyError = "NOGROUP the consumer group this client was blocked on no longer exists"
	ErrXClaimMinIdle            ReplyError = "ERR Invalid min-idle-time argument for XCLAIM"
	ErrXClaimIdle               ReplyError = "ERR Invalid IDLE option argument for XCLAIM"
	ErrXClaimTime               ReplyError = "ERR Invalid TIME option argument for XCLAIM"
	ErrXClaimRetryCount         ReplyError = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
	ErrXAutoClaimMinIdle        ReplyError = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
	ErrXAutoClaimCount          ReplyError = "ERR COUNT must be > 0"
	ErrEntriesRead              ReplyError = "ERR value for ENTRIESREAD must be positive or -1"
	ErrXGroupNoKey              ReplyError = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	ErrBusyGroup                ReplyError = "BUSYGROUP Consumer Group name already exists"
	ErrEntriesAdded             ReplyError = "ERR entries_added must be positive"
	ErrXSetIDBelowMaxDeletedArg ReplyError = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
	ErrXSetIDBelowMaxDeleted    ReplyError = "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
	ErrXSetIDTooSmall           ReplyError = "ERR The ID specified in XSETID is smaller than the target stream top item"
	ErrXSetIDEntriesAdded       ReplyError = "ERR The entries_added specified in XSETID is smaller than the target stream length"
)

// errNoGroup is the NOGROUP error of XPENDING, XCLAIM and XAUTOCLAIM.
func errNoGroup(key, group []byte) error {
	return ReplyError("NOGROUP No such key '" + cString(key, 1<<30) + "' or consumer group '" + cString(group, 1<<30) + "'")
}

// errNoGroupRead is XREADGROUP's NOGROUP error.
func errNoGroupRead(key, group []byte) error {
	return ReplyError("NOGROUP No such key '" + cString(key, 1<<30) + "' or consumer group '" + cString(group, 1<<30) + "' in XREADGROUP with GROUP option")
}

// errNoGroupForKey is the NOGROUP error of XGROUP and XINFO.
func errNoGroupForKey(group, key []byte) error {
	return ReplyError("NOGROUP No such consumer group '" + cString(group, 1<<30) + "' for key name '" + cString(key, 1<<30) + "'")
}

// errXClaimOption is XCLAIM's error for an option it does not know.
func errXClaimOption(opt []byte) error {
	return ReplyError("ERR Unrecognized XCLAIM option '" + cString(opt, 1<<30) + "'")
}

// errNotPositive is why CONFIG SET refuses a value for one of the actor's
// integer settings (the end of errConfigSetFailed's text).
var errNotPositive = errors.New("argument must be a positive integer")

// Redis's ends of errConfigSetFailed's text for an unsigned integer
// setting (tracking-table-max-keys).
var (
	errNotCount   = errors.New("argument couldn't be parsed into an integer")
	errCountRange = errors.New("argument must be between 0 and 9223372036854775807 inclusive")
)

// The ends of errConfigSetFailed's text for maxmemory-clients: Redis's for
// a value that is no size, and Cellar's own for a percentage (of
// maxmemory, which Cellar does not have) and for a budget under 1 MB.
var (
	errMemoryValue  = errors.New("argument must be a memory or percent value")
	errMemoryTooLow = errors.New("argument must be 0 (no limit) or at least 1mb")
)

// errSubcommandArgs is CLIENT's error for a subcommand given too many
// arguments.
// errQueueTooLarge refuses a command that would take a client's MULTI
// queue past transactions.max_queued_bytes (Cellar's limit; Redis has
// none).
func errQueueTooLarge(limit int64) error {
	return ReplyError(fmt.Sprintf("ERR MULTI queue would exceed %d bytes (transactions.max_queued_bytes)", limit))
}

// errExecAbortBecause is EXEC's reply when EXEC itself was refused (wrong
// arguments, not authenticated): the reason without its "ERR " code.
func errExecAbortBecause(reason string) error {
	return ReplyError("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(reason, "ERR "))
}

// errTooManyWatched refuses a WATCH past transactions.max_watched_keys
// (Cellar's limit; Redis has none).
func errTooManyWatched(limit int) error {
	return ReplyError(fmt.Sprintf("ERR too many watched keys: a client may watch at most %d (transactions.max_watched_keys)", limit))
}

func errSubcommandArgs(sub []byte) error { return errSubcommandSyntax("client", sub) }

// errSubcommandSyntax is a container's error for a subcommand given the
// wrong number of arguments (Redis's addReplySubcommandSyntaxError).
func errSubcommandSyntax(container string, sub []byte) error {
	return ReplyError("ERR unknown subcommand or wrong number of arguments for '" + cString(sub, 128) + "'. Try " + strings.ToUpper(container) + " HELP.")
}

// errSubscribedMode is the refusal of a command a RESP2 client may not run
// while it is subscribed; name is the command's full name ("client|list").
func errSubscribedMode(name string) error {
	return ReplyError("ERR Can't execute '" + name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}

// errConfigSetUnknown is CONFIG SET's error for a parameter it does not
// have.
func errConfigSetUnknown(param []byte) error {
	return ReplyError("ERR Unknown option or number of arguments for CONFIG SET - '" + cString(param, 1<<30) + "'")
}

// errConfigSetImmutable is CONFIG SET's error for a parameter fixed at
// start.
func errConfigSetImmutable(name string) error {
	return ReplyError("ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config")
}

// errConfigSetProtected is CONFIG SET's error for a parameter Redis
// protects (dir, dbfilename) while enable-protected-configs is no.
func errConfigSetProtected(name string) error {
	return ReplyError("ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set protected config")
}

// errDuplicateParam is the end of CONFIG SET's error for a parameter given
// twice.
var errDuplicateParam = errors.New("duplicate parameter")

// errFixedAtStart is the end of CONFIG SET's error for a setting Redis
// changes at run time and Cellar does not.
var errFixedAtStart = errors.New("can't set immutable config")

// ErrParamListen is CONFIG SET port's reason when the server cannot listen
// on the new port (Redis's text): Cellar's listener stays where it started.
var ErrParamListen = errors.New("Unable to listen on this port. Check server logs.")

// ErrParamBind is CONFIG SET bind's reason when the server cannot bind the
// new addresses (Redis's text): Cellar's listener stays where it started.
var ErrParamBind = errors.New("Failed to bind to specified addresses.")

// applyError is a Set's refusal that Redis meets in its apply step, once
// every value of the CONFIG SET has been set (listening on a new port,
// binding addresses, a setting Cellar fixes at start): a bad value
// anywhere in the call is reported before it (Redis's configSetCommand).
type applyError struct{ error }

// ApplyError marks err, returned by a Param's Set, as met while applying
// the new value rather than while checking it.
func ApplyError(err error) error { return applyError{err} }

// errConfigSetFailed is CONFIG SET's error for a value a parameter refused.
func errConfigSetFailed(name string, err error) error {
	return ReplyError("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + err.Error())
}

// errSnapshotStart is the error of SAVE, BGSAVE or SHUTDOWN SAVE when the
// offload pool refuses the snapshot job.
func errSnapshotStart(err error) error {
	return ReplyError("ERR cannot start the snapshot: " + err.Error())
}

// errSnapshotFailed is SAVE's reply when its snapshot failed.
func errSnapshotFailed(err error) error {
	return ReplyError("ERR snapshot failed: " + err.Error())
}

// errCannotWait is the error of a command whose reply waits for background
// work (SAVE) where it may not wait.
func errCannotWait(name string) error {
	return ReplyError("ERR " + name + " cannot wait here (inside MULTI or behind a blocked command)")
}

// errAtLeastOneKey is the numkeys error of ZUNION, ZINTER, ZDIFF, their
// STORE forms and ZINTERCARD.
func errAtLeastOneKey(name string) error {
	return ReplyError("ERR at least 1 input key is needed for '" + name + "' command")
}

// errUnsupportedOption is EXPIRE's error for an option it does not know.
func errUnsupportedOption(opt []byte) error {
	return ReplyError("ERR Unsupported option " + cString(opt, 1<<30))
}

// errCountMismatch reports a collection whose stored element count
// disagrees with its rows: a Cellar bug, never the client's fault.
func errCountMismatch(key []byte, stored, found int) error {
	return fmt.Errorf("actor: key %q: stored count %d, found %d elements", key, stored, found)
}

// errWrongArgs is Redis's arity error; name is the full name
// ("get", "client|setname").
func errHelloOption(opt []byte) error {
	return ReplyError("ERR Syntax error in HELLO option '" + cString(opt, 1<<30) + "'")
}

func errClientType(typ []byte) error {
	return ReplyError("ERR Unknown client type '" + cString(typ, 1<<30) + "'")
}

func errNoSuchUser(user []byte) error {
	return ReplyError("ERR No such user '" + cString(user, 1<<30) + "'")
}

func errWrongArgs(name string) error {
	return ReplyError("ERR wrong number of arguments for '" + name + "' command")
}

// errInvalidExpire is the error for an expiry that is negative or
// overflows, naming the command as the client spelled it (lower case).
func errInvalidExpire(cmd string) error {
	return ReplyError("ERR invalid expire time in '" + strings.ToLower(cmd) + "' command")
}

// errUnknownCommand is Redis's reply to a command it does not have: the name
// and the first arguments, each cut like C's %.128s (at a NUL, and 128
// bytes), the arguments together to about 128 bytes.
func errUnknownCommand(args [][]byte) error {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(cString(args[0], 128))
	b.WriteString("', with args beginning with: ")
	used := 0
	for _, a := range args[1:] {
		if used >= 128 {
			break
		}
		s := cString(a, 128-used)
		b.WriteByte('\'')
		b.WriteString(s)
		b.WriteString("' ")
		used += len(s) + 3
	}
	return ReplyError(b.String())
}

// errUnknownSubcommand is the reply to an unknown subcommand of a container.
func errUnknownSubcommand(container string, sub []byte) error {
	return ReplyError("ERR unknown subcommand '" + cString(sub, 128) + "'. Try " + strings.ToUpper(container) + " HELP.")
}

// cString is b as C's "%.Ns" prints it: up to the first NUL, at most n bytes.
func cString(b []byte, n int) string {
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// replyFor maps an error from a handler or from storage to its reply text.
// fatal is true for errors that are not the client's fault (SQLite I/O,
// disk full): the round's writes are then abandoned.
func replyFor(err error) (reply string, fatal bool) {
	var re ReplyError
	switch {
	case errors.As(err, &re):
		return string(re), false
	case errors.Is(err, storage.ErrWrongType):
		return string(ErrWrongType), false
	case errors.Is(err, storage.ErrNoSuchKey):
		return string(ErrNoSuchKey), false
	case errors.Is(err, storage.ErrIndexRange):
		return string(ErrIndexOutOfRange), false
	case storage.DiskFull(err):
		return "ERR write failed, nothing was changed: database or disk is full", true
	}
	return "ERR internal error: " + err.Error(), true
}

// Scripting and functions (scripting.go, functions.go, lua.go).
const (
	ErrScriptNoArgs     ReplyError = "ERR Please specify at least one argument for this redis lib call"
	ErrScriptArgType    ReplyError = "ERR Lua redis lib command arguments must be strings or integers"
	ErrScriptUnknownCmd ReplyError = "ERR Unknown Redis command called from script"
	ErrScriptArity      ReplyError = "ERR Wrong number of args calling Redis command from script"
	ErrScriptNoScript   ReplyError = "ERR This Redis command is not allowed from script"
	ErrScriptReadOnly   ReplyError = "ERR Write commands are not allowed from read-only scripts."
	ErrScriptNoCall     ReplyError = "ERR redis.call can only be called inside a script invocation"
	ErrScriptReplyDepth ReplyError = "ERR reached lua stack limit"
	ErrNoScript         ReplyError = "NOSCRIPT No matching script. Please use EVAL."
	ErrNumKeysNegative  ReplyError = "ERR Number of keys can't be negative"
	ErrScriptFlushArg   ReplyError = "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
	ErrFcallNumKeys     ReplyError = "ERR Bad number of keys provided"
	ErrNotBusy          ReplyError = "NOTBUSY No scripts in execution right now."
	ErrUnkillable       ReplyError = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	ErrBusyEval         ReplyError = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	ErrBusyFunction     ReplyError = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	ErrScriptKilled     ReplyError = "ERR Script killed by user with SCRIPT KILL..."
	ErrROWithWriteFlag  ReplyError = "ERR Can not execute a script with write flag using *_ro command."
)

// errScriptCompile is EVAL's reply to a script that does not compile.
func errScriptCompile(msg string) error {
	return ReplyError("ERR Error compiling script (new function): " + msg)
}

// errShebang* are the texts for a bad "#!" line.
func errShebangEngine(word string) error {
	return ReplyError("ERR Unexpected engine in script shebang: " + word)
}
func errShebangOption(opt string) error {
	return ReplyError("ERR Unknown lua shebang option: " + opt)
}
func errShebangFlag(flag string) error {
	return ReplyError("ERR Unexpected flag in script shebang: " + flag)
}

// Functions (functions.go).
const (
	ErrFnNoMetadata         ReplyError = "ERR Missing library metadata"
	ErrFnNoName             ReplyError = "ERR Library name was not given"
	ErrFnBadMetadata        ReplyError = "ERR Invalid library metadata"
	ErrFnNameTwice          ReplyError = "ERR Invalid metadata value, name argument was given multiple times"
	ErrFnLibName            ReplyError = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	ErrFnNoFunctions        ReplyError = "ERR No functions registered"
	ErrFnNotFound           ReplyError = "ERR Function not found"
	ErrFnLibNotFound        ReplyError = "ERR Library not found"
	ErrFnFlushArg           ReplyError = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
	ErrFnRegisterOutside    ReplyError = "ERR redis.register_function can only be called on FUNCTION LOAD command"
	ErrFnRegisterSingle     ReplyError = "ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."
	ErrFnRegisterArgs       ReplyError = "ERR wrong number of arguments to redis.register_function"
	ErrFnRegisterUnknownArg ReplyError = "ERR unknown argument given to redis.register_function"
	ErrFnNameType           ReplyError = "ERR function_name argument given to redis.register_function must be a string"
	ErrFnCallbackType       ReplyError = "ERR callback argument given to redis.register_function must be a function"
	ErrFnDescType           ReplyError = "ERR description argument given to redis.register_function must be a string"
	ErrFnFlagsType          ReplyError = "ERR flags argument to redis.register_function must be a table representing function flags"
	ErrFnFirstArg           ReplyError = "ERR first argument to redis.register_function must be a string"
	ErrFnSecondArg          ReplyError = "ERR second argument to redis.register_function must be a function"
	ErrFnUnknownFlag        ReplyError = "ERR unknown flag given"
	ErrFnNameMissing        ReplyError = "ERR redis.register_function must get a function name argument"
	ErrFnCallbackMissing    ReplyError = "ERR redis.register_function must get a callback argument"
	ErrFnName               ReplyError = "ERR Function names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	ErrFnAlreadyInLib       ReplyError = "ERR Function already exists in the library"
	ErrFnLoadNoCode         ReplyError = "ERR Function code was not given"
	ErrFnListLibTwice       ReplyError = "ERR library name argument was already given"
	ErrFnListLibMissing     ReplyError = "ERR library name argument was not given"
	ErrFnRestorePolicy      ReplyError = "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
	ErrFnDumpPayload        ReplyError = "ERR DUMP payload version or checksum are wrong"
	ErrFnDumpType           ReplyError = "ERR given type is not a function"
)

func errFnEngine(name string) error { return ReplyError("ERR Engine '" + name + "' not found") }
func errFnMetadata(kv string) error { return ReplyError("ERR Invalid metadata value given: " + kv) }
func errFnLibExists(name string) error {
	return ReplyError("ERR Library '" + name + "' already exists")
}
func errFnExists(name string) error { return ReplyError("ERR Function " + name + " already exists") }
func errFnCompile(msg string) error {
	return ReplyError("ERR Error compiling function: " + msg)
}
func errFnRegister(msg string) error {
	return ReplyError("ERR Error registering functions: " + msg)
}
func errFnUnknownOption(opt string) error {
	return ReplyError("ERR Unknown option given: " + opt)
}
func errFnUnknownArgument(arg string) error {
	return ReplyError("ERR Unknown argument " + arg)
}

// errPrefixOverlapExisting: a new BCAST prefix overlaps one the client has.
func errPrefixOverlapExisting(p []byte, old string) error {
	return ReplyError("ERR Prefix '" + string(p) + "' overlaps with an existing prefix '" + old + "'. Prefixes for a single client must not overlap.")
}

// errPrefixOverlapNew: two of the new BCAST prefixes overlap.
func errPrefixOverlapNew(p, q []byte) error {
	return ReplyError("ERR Prefix '" + string(p) + "' overlaps with another provided prefix '" + string(q) + "'. Prefixes for a single client must not overlap.")
}

// DUMP and RESTORE (dump.go), as Redis 7.0's restoreCommand answers.
const (
	ErrBusyKey       ReplyError = "BUSYKEY Target key name already exists."
	ErrRestoreTTL    ReplyError = "ERR Invalid TTL value, must be >= 0"
	ErrRestoreIdle   ReplyError = "ERR Invalid IDLETIME value, must be >= 0"
	ErrRestoreFreq   ReplyError = "ERR Invalid FREQ value, must be >= 0 and <= 255"
	ErrDumpPayload   ReplyError = "ERR DUMP payload version or checksum are wrong"
	ErrBadDataFormat ReplyError = "ERR Bad data format"
)

// MIGRATE (migrate.go), as Redis 7.0's migrateCommand answers ("reading
// to target instance" is Redis's wording).
const (
	ErrMigrateKeysArg ReplyError = "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
	ErrMigrateConnect ReplyError = "IOERR error or timeout connecting to the client"
	ErrMigrateWrite   ReplyError = "IOERR error or timeout writing to target instance"
	ErrMigrateRead    ReplyError = "IOERR error or timeout reading to target instance"
)

// errMigrateTarget is MIGRATE's reply when the target answered an error
// (text without its "-").
func errMigrateTarget(text string) error {
	return ReplyError("ERR Target instance replied with error: " + text)
}

// Replication (replication.go), as Redis 7.0 answers.
const (
	ErrReadOnlyReplica   ReplyError = "READONLY You can't write against a read only replica."
	ErrInvalidMasterPort ReplyError = "ERR Invalid master port"
	ErrNoReplication     ReplyError = "ERR replication is not available in this server"
	ErrStaleMaster       ReplyError = "ERR this connection is no longer the master's"
)

// Bitmaps, bit fields and HyperLogLogs (bitmaps.go, hyperloglog.go).
const (
	ErrBitValue         ReplyError = "ERR bit is not an integer or out of range"
	ErrBitArg           ReplyError = "ERR The bit argument must be 1 or 0."
	ErrBitOpNot         ReplyError = "ERR BITOP NOT must be called with a single source key."
	ErrBitfieldType     ReplyError = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	ErrBitfieldOverflow ReplyError = "ERR Invalid OVERFLOW type specified"
	ErrBitfieldRO       ReplyError = "ERR BITFIELD_RO only supports the GET subcommand"
	ErrNotHLL           ReplyError = "WRONGTYPE Key is not a valid HyperLogLog string value."
	ErrInvalidHLL       ReplyError = "INVALIDOBJ Corrupted HLL object detected"
	ErrPFDebugNoKey     ReplyError = "ERR The specified key does not exist"
	ErrHLLNotSparse     ReplyError = "ERR HLL encoding is not sparse"
	ErrLCSNotString     ReplyError = "ERR The specified keys must contain string values"
	ErrLCSIdxAndLen     ReplyError = "ERR If you want both the length and indexes, please just use IDX."
	ErrLCSTooBig        ReplyError = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
	ErrSortNotDouble    ReplyError = "ERR One or more scores can't be converted into double"

	ErrDebugProtocolType ReplyError = "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"
	ErrRESP2NotSupported ReplyError = "ERR RESP2 is not supported by this command"
	ErrDebugNotAllowed   ReplyError = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	// ErrModuleNotAllowed refuses MODULE LOAD, LOADEX and UNLOAD while
	// enable-module-command does not allow them.
	ErrModuleNotAllowed   ReplyError = "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	ErrModuleLoad         ReplyError = "ERR Error loading the extension. Please check the server logs."
	ErrModuleUnloadNoSuch ReplyError = "ERR Error unloading module: no such module with that name"
	// ErrClusterDisabled answers every CLUSTER subcommand, ASKING, READONLY
	// and READWRITE: Cellar runs as a Redis with cluster-enabled no.
	ErrClusterDisabled   ReplyError = "ERR This instance has cluster support disabled"
	ErrDebugReloadOption ReplyError = "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."
)

// errPFDebugArity is PFDEBUG's error for a subcommand given extra arguments.
func errPFDebugArity(sub []byte) error {
	return ReplyError("ERR Wrong number of arguments for the '" + cString(sub, 1<<30) + "' subcommand")
}

// errPFDebugUnknown is PFDEBUG's error for a subcommand it does not know.
func errPFDebugUnknown(sub []byte) error {
	return ReplyError("ERR Unknown PFDEBUG subcommand '" + cString(sub, 1<<30) + "'")
}

// errPFSelfTest is PFSELFTEST's failure.
func errPFSelfTest(msg string) error { return ReplyError("ERR " + msg) }

// ACL (acl.go, aclcmd.go): Redis 7.0's texts.
const (
	ErrNoPermKey      ReplyError = "NOPERM this user has no permissions to access one of the keys used as arguments"
	ErrNoPermChannel  ReplyError = "NOPERM this user has no permissions to access one of the channels used as arguments"
	ErrACLUserSpaces  ReplyError = "ERR Usernames can't contain spaces or null characters"
	ErrACLDelDefault  ReplyError = "ERR The 'default' user cannot be removed"
	ErrACLGenPassBits ReplyError = "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"
	ErrACLNoFile      ReplyError = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
	ErrACLSave        ReplyError = "ERR There was an error trying to save the ACLs. Please check the server logs for more information"
)

func errNoPermCmd(name string) error {
	return ReplyError("NOPERM this user has no permissions to run the '" + name + "' command")
}

func errNoPermExec(reason string) error {
	return ReplyError("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + reason)
}

// errScriptNoPerm is redis.call's refusal of a command the script's caller
// may not run.
func errScriptNoPerm(d aclDenial) ReplyError {
	switch d {
	case aclDeniedKey:
		return "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
	case aclDeniedChannel:
		return "ERR The user executing the script can't publish to the channel mentioned in the command"
	}
	return "ERR The user executing the script can't run this command or subcommand"
}

func errACLUnmatched(arg []byte) error {
	return ReplyError("ERR Unmatched parenthesis in acl selector starting at '" + cString(arg, 1<<30) + "'.")
}

func errACLSetUser(op []byte, why error) error {
	return ReplyError("ERR Error in ACL SETUSER modifier '" + cString(op, 1<<30) + "': " + why.Error())
}

func errACLUnknownCategory(cat []byte) error {
	return ReplyError("ERR Unknown category '" + cString(cat, 128) + "'")
}

func errACLNoUser(name []byte) error {
	return ReplyError("ERR User '" + cString(name, 1<<30) + "' not found")
}

func errACLNoCommand(name []byte) error {
	return ReplyError("ERR Command '" + cString(name, 1<<30) + "' not found")
}

// SORT's patterns read keys its arguments do not name; a user without read
// access to every key may not use them (Ctx.canReadAnyKey).
const (
	ErrSortByACL  ReplyError = "ERR BY option of SORT denied due to insufficient ACL permissions."
	ErrSortGetACL ReplyError = "ERR GET option of SORT denied due to insufficient ACL permissions."
)

// Errors of the operators' commands (slowlog.go, latency.go, memory.go).
const (
	ErrSlowlogCount ReplyError = "ERR count should be greater than or equal to -1"
)

// errNoLatencySamples is LATENCY GRAPH's reply for an event without samples.
func errNoLatencySamples(event string) error {
	return ReplyError("ERR No samples available for event '" + event + "'")
}

// ErrNoConfigFile is CONFIG REWRITE's reply when Cellar was started
// without a configuration file.
const ErrNoConfigFile ReplyError = "ERR The server is running without a config file"

// errRewriteConfig is CONFIG REWRITE's reply when writing the file failed.
func errRewriteConfig(err error) error {
	return ReplyError("ERR Rewriting config file: " + err.Error())
}

// The geo commands (geo.go).
const (
	ErrGeoUnit            ReplyError = "ERR unsupported unit provided. please use M, KM, FT, MI"
	ErrGeoRadiusNotNumber ReplyError = "ERR need numeric radius"
	ErrGeoRadiusNegative  ReplyError = "ERR radius cannot be negative"
	ErrGeoWidthNotNumber  ReplyError = "ERR need numeric width"
	ErrGeoHeightNotNumber ReplyError = "ERR need numeric height"
	ErrGeoBoxNegative     ReplyError = "ERR height or width cannot be negative"
	ErrGeoMemberMissing   ReplyError = "ERR could not decode requested zset member"
	ErrGeoCount           ReplyError = "ERR COUNT must be > 0"
	ErrGeoAnyNeedsCount   ReplyError = "ERR the ANY argument requires COUNT argument"
)

// errGeoLonLat is the error for a position outside what a geohash covers;
// the numbers are printed as C's %f prints them.
func errGeoLonLat(lon, lat float64) error {
	return ReplyError("ERR invalid longitude,latitude pair " + cFloatF(lon) + "," + cFloatF(lat))
}

// cFloatF formats v as C's printf("%f").
func cFloatF(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

// errGeoStoreWith refuses WITHDIST, WITHHASH and WITHCOORD with a store
// (what names the store: "GEOSEARCHSTORE" or "STORE option in GEORADIUS").
func errGeoStoreWith(what string) error {
	return ReplyError("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
}

// errGeoFrom and errGeoBy name the command as the client spelled it.
func errGeoFrom(cmd []byte) error {
	return ReplyError("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(cmd))
}

func errGeoBy(cmd []byte) error {
	return ReplyError("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(cmd))
}

// Hash field expiration (hashfe.go), Redis 7.4's texts.
const (
	ErrHFEExpireNegative    ReplyError = "ERR invalid expire time, must be >= 0"
	ErrHFEFieldsMissing     ReplyError = "ERR Mandatory argument FIELDS is missing or not at the right position"
	ErrHFENumFieldsPositive ReplyError = "ERR Parameter `numFields` should be greater than 0"
	ErrHFEFieldsPositive    ReplyError = "ERR Number of fields must be a positive integer"
	ErrHFENumFields         ReplyError = "ERR The `numfields` parameter must match the number of arguments"
)

// errHFEExpireTime is Redis's addReplyErrorExpireTime for a field expiry.
func errHFEExpireTime(cmd string) error {
	return ReplyError("ERR invalid expire time in '" + cmd + "' command")
}

// Search (FT.*, search.go and searchquery.go): RediSearch's texts, which
// carry no "ERR" code (a module's error replies start with the text).
const (
	ErrFtDBNotZero         ReplyError = "Cannot create index on db != 0"
	ErrFtIndexExists       ReplyError = "Index already exists"
	ErrFtOnArgs            ReplyError = "Bad arguments for ON: Expected an argument, but none provided"
	ErrFtOnType            ReplyError = "Invalid index type: Cellar indexes hashes only (ON HASH)"
	ErrFtLanguageArgs      ReplyError = "Bad arguments for LANGUAGE: Expected an argument, but none provided"
	ErrFtScoreArgs         ReplyError = "Bad arguments for SCORE: Expected an argument, but none provided"
	ErrFtScoreRange        ReplyError = "Invalid score"
	ErrFtNoSchema          ReplyError = "No schema found"
	ErrFtNoFields          ReplyError = "Fields arguments are missing"
	ErrFtWeightArgs        ReplyError = "Bad arguments for WEIGHT: Expected an argument, but none provided"
	ErrFtWeight            ReplyError = "Could not parse field spec: bad WEIGHT"
	ErrFtPhoneticArgs      ReplyError = "Bad arguments for PHONETIC: Expected an argument, but none provided"
	ErrFtSeparator         ReplyError = "Tag separator must be a single character"
	ErrFtUnknownIndex      ReplyError = "Unknown Index name"
	ErrFtUnknownIndexLower ReplyError = "Unknown index name"
	ErrFtAlterSyntax       ReplyError = "Unknown action passed to ALTER SCHEMA"
	ErrFtAliasExists       ReplyError = "Alias already exists"
	ErrFtAliasMissing      ReplyError = "Alias does not exist"
	ErrFtQueryTooDeep      ReplyError = "Parser stack overflow. Try moving nested parentheses more to the left"
	ErrFtDialect           ReplyError = "DIALECT requires a non negative integer >=1 and <= 4"
	ErrFtLimit             ReplyError = "Bad arguments for LIMIT: Value is outside acceptable bounds"
	ErrFtSugScore          ReplyError = "ERR invalid score"
	ErrFtCursorMissing     ReplyError = "Cursor not found"
	ErrFtCursorNotExist    ReplyError = "Cursor does not exist"
	ErrFtAddScore          ReplyError = "Score must be between 0 and 1"
	ErrFtNoFieldList       ReplyError = "No field list found"
	ErrFtFieldsPairs       ReplyError = "Fields must be specified in FIELD VALUE pairs"
	ErrFtDocExists         ReplyError = "Document already exists"
	ErrFtSpellDistance     ReplyError = "bad distance given, distance must be a natural number between 1 to 4"
	ErrFtSpellTerms        ReplyError = "bad format, exlude/include operation was not given"
	ErrFtSugMax            ReplyError = "Invalid MAX value"
	ErrFtConfigOption      ReplyError = "Invalid option"
	ErrFtConfigSyntax      ReplyError = "ERR wrong number of arguments for 'ft.config' command"
	ErrFtParamsCount       ReplyError = "Parameters must be specified in PARAM VALUE pairs"
)

func errFtLanguage(lang []byte) error {
	return ReplyError(fmt.Sprintf("Invalid language: Cellar stems English only, not '%s'", lang))
}
func errFtUnknownArg(arg []byte) error {
	return ReplyError(fmt.Sprintf("Unknown argument `%s`", arg))
}
func errFtBadCount(what string) error {
	return ReplyError(fmt.Sprintf("Bad arguments for %s: Value is outside acceptable bounds", what))
}
func errFtFieldType(field string) error {
	return ReplyError(fmt.Sprintf("Field `%s` does not have a type", field))
}
func errFtFieldTypeNamed(t []byte) error {
	return ReplyError(fmt.Sprintf("Invalid field type for field `%s`", t))
}
func errFtDupField(field string) error {
	return ReplyError(fmt.Sprintf("Duplicate field in schema - %s", field))
}
func errFtNotTag(field []byte) error {
	return ReplyError(fmt.Sprintf("No such tag field `%s`", field))
}
func errFtSyntax(offset int, near string) error {
	return ReplyError(fmt.Sprintf("Syntax error at offset %d near %s", offset, near))
}
func errFtNoParam(name string) error {
	return ReplyError(fmt.Sprintf("No such parameter `%s`", name))
}
func errFtBadRange(which, tok string) error {
	return ReplyError(fmt.Sprintf("Bad %s range: %s", which, tok))
}
func errFtArgMissing(arg []byte) error {
	return ReplyError(fmt.Sprintf("Bad arguments for %s: Expected an argument, but none provided", strings.ToUpper(string(arg))))
}
func errFtNoProperty(name string) error {
	return ReplyError(fmt.Sprintf("Property `%s` not loaded nor in schema", name))
}
func errFtUnknownField(name []byte) error {
	return ReplyError(fmt.Sprintf("Unknown field `%s`", name))
}
func errFtUnsupported(arg []byte) error {
	return ReplyError(fmt.Sprintf("%s is not supported by Cellar's FT.SEARCH", strings.ToUpper(string(arg))))
}
func errFtUnknownSearchArg(arg []byte, pos int) error {
	return ReplyError(fmt.Sprintf("Unknown argument `%s` at position %d for <main>", arg, pos))
}
func errFtNoSuchIndex(name []byte) error {
	return ReplyError(fmt.Sprintf("%s: no such index", name))
}
func errFtBadProperty(name []byte) error {
	return ReplyError(fmt.Sprintf("Unknown property `%s`. Did you mean `@%s`?", name, name))
}
func errFtReducer(name string) error {
	return ReplyError(fmt.Sprintf("No such reducer `%s`", name))
}
func errFtReducerArgs(name string) error {
	return ReplyError(fmt.Sprintf("Bad arguments for %s: wrong number of arguments", name))
}
func errFtExpr(expr string, pos int) error {
	near := expr[pos:]
	if len(near) > 10 {
		near = near[:10]
	}
	return ReplyError(fmt.Sprintf("Syntax error at offset %d near %s", pos, near))
}
func errFtFunction(name string) error {
	return ReplyError(fmt.Sprintf("Unknown function name '%s'", name))
}
func errFtFunctionArgs(name string) error {
	return ReplyError(fmt.Sprintf("Function '%s' was called with the wrong number of arguments", name))
}
func errFtLimitTooLarge(limit int64) error {
	return ReplyError(fmt.Sprintf("LIMIT exceeds maximum of %d", limit))
}
func errFtConfigValue(name string) error {
	return ReplyError(fmt.Sprintf("Invalid value for %s", name))
}
func errFtUnknownKeyword(arg []byte) error {
	return ReplyError(fmt.Sprintf("Unknown keyword `%s` given", arg))
}
func errFtTooMany(what string, limit int) error {
	return ReplyError(fmt.Sprintf("Too many %s (%d)", what, limit))
}
func errFtQuery(msg string) error {
	return ReplyError(fmt.Sprintf("Syntax error: %s", msg))
}

// Serving replicas (master.go).
const (
	ErrNoMasterLink ReplyError = "NOMASTERLINK Can't SYNC while not connected with my master"
	ErrSyncNoLog    ReplyError = "ERR replicas are served from the redo log, which this server runs without"
	ErrWaitReplica  ReplyError = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."
	ErrRdbOnlyRange ReplyError = "ERR value is out of range, value must between 0 and 1"
	ErrNoReplicas   ReplyError = "NOREPLICAS Not enough good replicas to write."
)

// FAILOVER (failover.go), as Redis 7.0's replication.c.
const (
	ErrNoFailover          ReplyError = "ERR No failover in progress."
	ErrFailoverTimeout     ReplyError = "ERR FAILOVER timeout must be greater than 0"
	ErrFailoverRunning     ReplyError = "ERR FAILOVER already in progress."
	ErrFailoverReplica     ReplyError = "ERR FAILOVER is not valid when server is a replica."
	ErrFailoverNoReplicas  ReplyError = "ERR FAILOVER requires connected replicas."
	ErrFailoverForce       ReplyError = "ERR FAILOVER with force option requires both a timeout and target HOST and IP."
	ErrFailoverNotReplica  ReplyError = "ERR FAILOVER target HOST and PORT is not a replica."
	ErrFailoverNotOnline   ReplyError = "ERR FAILOVER target replica is not online."
	ErrReplicaOfFailover   ReplyError = "ERR REPLICAOF not allowed while failing over."
	ErrPsyncFailoverMaster ReplyError = "ERR PSYNC FAILOVER can't be sent to a master."
	ErrPsyncFailoverReplID ReplyError = "ERR PSYNC FAILOVER replid must match my replid."
	ErrSyncFailingOver     ReplyError = "NOMASTERLINK Can't SYNC while failing over"
)

// ErrMasterDown is a replica's refusal with replica-serve-stale-data no
// while its link is down (replication.go).
const ErrMasterDown ReplyError = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."

func errReplconfOption(opt []byte) error {
	return ReplyError("ERR Unrecognized REPLCONF option: " + string(opt))
}

func errReplconfIPTooLong(n int) error {
	return ReplyError(fmt.Sprintf("ERR REPLCONF ip-address provided by replica instance is too long: %d bytes", n))
}

// ErrUnblockedRole ends every blocked client's wait when the server becomes
// a replica (Redis 7.0's disconnectAllBlockedClients).
const ErrUnblockedRole ReplyError = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
