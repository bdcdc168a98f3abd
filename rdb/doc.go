// Package rdb reads and writes Redis's RDB serialization: whole RDB files
// as a master streams them to a replica (Reader, which reads from an
// io.Reader key by key and never holds more than the value being decoded),
// and the payloads of DUMP and RESTORE (DecodeDump, AppendDump); and whole
// files of version 10 as Cellar, a master, sends one to a replica
// (FileWriter, built in memory).
//
// It reads every type Redis 7.0 writes and those older versions wrote:
// strings (plain, integer and LZF-compressed encodings); lists as linked
// lists, ziplists and quicklists of ziplists or listpacks; sets as
// hashtables, intsets and listpacks; sorted sets as skiplists (text or
// binary doubles), ziplists and listpacks; hashes as hashtables, zipmaps,
// ziplists and listpacks; streams (listpacks formats 1, 2 and 3, with
// consumer groups, their pending entries and consumers); and the file's
// SELECTDB, RESIZEDB, AUX, expiry, LRU/LFU, FUNCTION2 and EOF opcodes with
// the CRC-64 checksum. Module types are refused with an error that names
// the key: Cellar cannot interpret them.
//
// The package knows nothing of Cellar's storage: a decoded value is an
// Object, and the caller stores it. It is not safe for concurrent use; each
// Reader belongs to the goroutine that reads with it.
//
// The format is described by Redis's source (src/rdb.h, src/rdb.c,
// src/ziplist.c, src/listpack.c, src/t_stream.c) and at
// https://rdb.fnordig.de/file_format.html.
package rdb
