/* queue: an intrusive doubly-linked list (the libuv/Redis idiom). A node
 * lives inside the object it links; the list owns nothing. */
#ifndef PARLEY_UTIL_QUEUE_H
#define PARLEY_UTIL_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct queue_node_s {
    struct queue_node_s *next, *prev;
} queue_node_t;

#define queue_entry(ptr, type, field) ((type *)((char *)(ptr)-offsetof(type, field)))

static inline void queue_init(queue_node_t *h)
{
    h->next = h->prev = h;
}

static inline bool queue_empty(const queue_node_t *h)
{
    return h->next == h;
}

static inline void queue_push_tail(queue_node_t *h, queue_node_t *n)
{
    n->prev = h->prev;
    n->next = h;
    h->prev->next = n;
    h->prev = n;
}

static inline void queue_remove(queue_node_t *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n->prev = n;
}

static inline queue_node_t *queue_head(const queue_node_t *h)
{
    return h->next;
}

#endif
