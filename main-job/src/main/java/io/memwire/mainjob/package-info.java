/**
 * The main job: a shuffle-heavy Spark application ({@link io.memwire.mainjob.ShuffleApp}) and the
 * launcher that submits it with Memwire's shuffle manager and with Spark's own and compares them
 * ({@link io.memwire.mainjob.MainJob}).
 */
package io.memwire.mainjob;
