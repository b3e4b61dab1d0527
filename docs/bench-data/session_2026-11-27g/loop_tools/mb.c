#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){MPI_Init(&argc,&argv);int me,n;MPI_Comm_rank(MPI_COMM_WORLD,&me);MPI_Comm_size(MPI_COMM_WORLD,&n);
const char*op=argv[1];int iters=atoi(argv[2]),reps=atoi(argv[3]);size_t bytes=argc>4?atoi(argv[4]):8;
double*a=calloc(bytes/8+1,8),*b=calloc(bytes/8+1,8);char*g=calloc(bytes*n+8,1),*x=calloc(bytes*n+8,1);double res[64];
for(int r=0;r<reps;++r){MPI_Barrier(MPI_COMM_WORLD);double t0=MPI_Wtime();
for(int i=0;i<iters;++i){
 if(!strcmp(op,"bcast"))MPI_Bcast(a,bytes,MPI_CHAR,0,MPI_COMM_WORLD);
 else if(!strcmp(op,"reduce"))MPI_Reduce(a,b,bytes/8,MPI_DOUBLE,MPI_SUM,0,MPI_COMM_WORLD);
 else if(!strcmp(op,"gather"))MPI_Gather(a,bytes,MPI_CHAR,g,bytes,MPI_CHAR,0,MPI_COMM_WORLD);
 else if(!strcmp(op,"barrier"))MPI_Barrier(MPI_COMM_WORLD);
 else if(!strcmp(op,"allreduce"))MPI_Allreduce(a,b,bytes/8,MPI_DOUBLE,MPI_SUM,MPI_COMM_WORLD);
 else if(!strcmp(op,"alltoall"))MPI_Alltoall(x,bytes,MPI_CHAR,g,bytes,MPI_CHAR,MPI_COMM_WORLD);}
double us=(MPI_Wtime()-t0)*1e6/iters;MPI_Allreduce(&us,&res[r],1,MPI_DOUBLE,MPI_MAX,MPI_COMM_WORLD);}
qsort(res,reps,8,cmp);if(!me)printf("MPI %s %d ranks %zu B: median %.3f us min %.3f max %.3f\n",op,n,bytes,res[reps/2],res[0],res[reps-1]);MPI_Finalize();}
