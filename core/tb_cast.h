/*
 * tb_cast: the one way to pass a pointer to const where an interface takes a
 * pointer to non-const that it does not write through.
 *
 * The build warns on every cast that drops const (-Wcast-qual), so a cast
 * that writes through a const object fails to build; the few interfaces that
 * take `void *` or `char *` for data they only read (MYSQL_BIND.buffer of an
 * input parameter, iconv's input, librdkafka's RD_KAFKA_V_VALUE) and the
 * reference count of an object that is otherwise immutable (evt_table_ref)
 * go through TB_UNCONST, each with the reason beside it.
 */
#ifndef TB_CAST_H
#define TB_CAST_H

#include <stdint.h>

#define TB_UNCONST(p) ((void *)(uintptr_t)(const void *)(p))

#endif
